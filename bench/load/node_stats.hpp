#pragma once

#include "redlock/config.hpp"

#include <hiredis/hiredis.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::bench {

/// What one node says about itself.
struct node_snapshot {
    std::map<std::string, std::uint64_t> calls;  ///< INFO commandstats: calls per command
    double cpu_seconds = 0;                      ///< INFO cpu: used_cpu_user + used_cpu_sys
};

/// What the nodes say about themselves, summed over every node, and each node's own.
struct server_snapshot {
    std::map<std::string, std::uint64_t> calls;  ///< INFO commandstats: calls per command
    double cpu_seconds = 0;                      ///< INFO cpu: used_cpu_user + used_cpu_sys
    std::vector<node_snapshot> nodes;            ///< in the order of names()
};

/// Synchronous hiredis connections to every node of a config, beside the load:
/// for INFO before and after a phase, and to load the scripts the raw modes
/// call with EVALSHA.
class node_stats {
public:
    /// Connects to every node (1 s timeout each); nullopt if one cannot be reached.
    [[nodiscard]] static auto connect(const client_config& config) -> std::optional<node_stats>;

    node_stats(node_stats&&) noexcept = default;
    auto operator=(node_stats&&) noexcept -> node_stats& = default;
    node_stats(const node_stats&) = delete;
    auto operator=(const node_stats&) -> node_stats& = delete;
    ~node_stats() = default;

    [[nodiscard]] auto snapshot() -> server_snapshot;
    /// SCRIPT LOAD of every library script on every node; false if a node
    /// refused or named a script differently from lib/sansio/scripts.cpp.
    [[nodiscard]] auto load_scripts() -> bool;
    /// The first node's redis_version.
    [[nodiscard]] auto redis_version() -> std::string;
    /// Each node's address, in the config's order.
    [[nodiscard]] auto names() const -> const std::vector<std::string>& { return names_; }

private:
    struct context_free {
        void operator()(redisContext* c) const noexcept { redisFree(c); }
    };
    using context = std::unique_ptr<redisContext, context_free>;
    node_stats() = default;
    [[nodiscard]] auto info(redisContext* c, const char* section) -> std::string;

    std::vector<context> nodes_;
    std::vector<std::string> names_;
};

}  // namespace redlock::bench
