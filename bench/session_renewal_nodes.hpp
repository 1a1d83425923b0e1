#pragma once

// What the nodes say about themselves, for bench/session_renewal.cpp: CPU
// used, script calls and their time (INFO commandstats), keys held (DBSIZE).
// Plain synchronous hiredis connections beside the client under test.

#include <hiredis/hiredis.h>
#include <redlock/config.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::bench {

/// One command's line of INFO commandstats.
struct command_figures {
    std::uint64_t calls = 0;
    std::uint64_t usec = 0;
};

/// One node's counters at one moment.
struct node_figures {
    double cpu_seconds = 0;   ///< INFO cpu: used_cpu_user + used_cpu_sys
    command_figures evalsha;  ///< the renewal scripts (extend, session extend)
    command_figures eval;     ///< the same after a NOSCRIPT
    command_figures time;     ///< the watchdog's clock probes
    std::uint64_t calls = 0;  ///< every command (scripts' inner calls too); not INFO, DBSIZE, PING
};

/// Synchronous connections to every node of a config.
class node_probe {
public:
    /// Connects to every standalone node (1 s timeout); nullopt, said on
    /// stderr, when one cannot be reached or refuses AUTH.
    [[nodiscard]] static auto connect(const client_config& config) -> std::optional<node_probe>;

    /// Every node's counters, in the config's order; nullopt if one did not answer.
    [[nodiscard]] auto read() -> std::optional<std::vector<node_figures>>;
    /// DBSIZE summed over the nodes; nullopt if one did not answer.
    [[nodiscard]] auto keys() -> std::optional<std::uint64_t>;
    /// One PING to each node in turn: each round trip in ms (what another
    /// client waits behind a running script); fewer when one did not answer.
    [[nodiscard]] auto ping() -> std::vector<double>;
    /// When `key` expires on each node, in the config's order: the middle of
    /// the PTTL's round trip plus its answer; nullopt where it has no TTL or a
    /// node did not answer (bench/election_failover.cpp).
    [[nodiscard]] auto expiries(const std::string& key)
        -> std::vector<std::optional<std::chrono::steady_clock::time_point>>;

private:
    struct context_free {
        void operator()(redisContext* c) const noexcept { redisFree(c); }
    };
    using context = std::unique_ptr<redisContext, context_free>;
    node_probe() = default;

    std::vector<context> nodes_;
};

}  // namespace redlock::bench
