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

/// Configured nodes that are one Redis server: they reported the same run_id
/// in INFO server. validate_config rejects the aliases it can see in the
/// spelling (localhost and 127.0.0.1, "::1" and "0:0:0:0:0:0:0:1"); this finds
/// the others, such as 127.0.0.1 and 127.0.0.2 reaching a server bound to both,
/// or a TCP port and the same server's Unix socket. Such a server grants a lock
/// once however often it is listed, so the cluster tolerates fewer failures
/// than its node count suggests.
struct duplicate_server {
    std::string run_id;
    /// Positions in the configuration (and in cluster_health::nodes),
    /// ascending; at least two.
    std::vector<std::size_t> nodes;
};

/// The groups of `nodes` that reported one run_id, ordered by their first
/// node. A node without a run_id (unreachable, or INFO refused) is in none.
[[nodiscard]] auto find_duplicate_servers(const std::vector<node_health>& nodes)
    -> std::vector<duplicate_server>;

struct cluster_health {
    std::size_t quorum = 0;
    std::vector<node_health> nodes;
    /// find_duplicate_servers(nodes), filled by client::check.
    std::vector<duplicate_server> duplicates;
    /// How many servers the nodes are at most: each group of duplicates counts
    /// once, and a node whose run_id is unknown counts as a server of its own.
    [[nodiscard]] auto servers() const noexcept -> std::size_t {
        std::size_t n = nodes.size();
        for (const auto& d : duplicates) n -= d.nodes.size() - 1;
        return n;
    }
    [[nodiscard]] auto reachable() const noexcept -> std::size_t {
        std::size_t n = 0;
        for (const auto& h : nodes) n += h.reachable ? 1 : 0;
        return n;
    }
    [[nodiscard]] auto quorum_reachable() const noexcept -> bool { return reachable() >= quorum; }
};

}  // namespace redlock
