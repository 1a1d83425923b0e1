#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

/// What one node says about one resource (client::status).
struct node_lock_state {
    std::string node;
    bool reachable = false;
    std::string detail;                            ///< why not reachable, or a Redis error
    std::optional<std::string> holder;             ///< the value stored, if the key exists
    std::optional<std::chrono::milliseconds> ttl;  ///< remaining TTL of the key, if it exists
    std::optional<std::uint64_t> fence;            ///< the fencing counter, if one was ever written
};

/// client::status: every node's view, and whether a majority agree on one holder.
struct lock_status {
    std::string resource;
    std::size_t quorum = 0;
    std::vector<node_lock_state> nodes;
    /// The value held on a majority of nodes, if any: the current holder.
    std::optional<std::string> majority_holder;
    /// The highest fencing counter any reachable node reported.
    std::optional<std::uint64_t> fence;
};

/// What one node says about itself (client::check).
struct node_health {
    std::string node;
    bool reachable = false;
    std::string detail;  ///< why not reachable
    std::chrono::microseconds round_trip{0};
    std::string redis_version;
    std::string run_id;
    std::string role;                 ///< "master", or "slave" for a replica
    std::optional<bool> aof_enabled;  ///< appendonly
    std::optional<std::string>
        appendfsync;  ///< "always", "everysec", "no"; unknown if CONFIG is disabled
    /// True when the node may forget a lock it acknowledged if it crashes: it
    /// does not persist every write (appendonly yes + appendfsync always).
    [[nodiscard]] auto can_lose_writes() const noexcept -> bool {
        return !(aof_enabled.value_or(false) && appendfsync.value_or("") == "always");
    }
};

struct cluster_health {
    std::size_t quorum = 0;
    std::vector<node_health> nodes;
    [[nodiscard]] auto reachable() const noexcept -> std::size_t {
        std::size_t n = 0;
        for (const auto& h : nodes) n += h.reachable ? 1 : 0;
        return n;
    }
    [[nodiscard]] auto quorum_reachable() const noexcept -> bool { return reachable() >= quorum; }
};

}  // namespace redlock
