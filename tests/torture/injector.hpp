#pragma once

// The torture test's fault injector: at random intervals from a seeded generator, it
// kills and restarts nodes, freezes and thaws them, and, through each node's fault
// proxy, adds latency, drops connections and blackholes traffic. By default never more
// than a minority of the nodes is impaired at once (killed, frozen, blackholed, or slowed
// past the request timeout), so a majority stays reachable and the system should stay
// live.
//
// The schedule is a function of the seed; what it hits (which lock is held when) also
// depends on timing, so a replay with the same seed injects the same sequence of faults
// at the same offsets, not the same interleaving.

#include "support/fault_proxy.hpp"
#include "support/redis_server.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace redlock_torture {

struct injector_settings {
    /// Nodes that persist every write (appendonly yes, appendfsync always): they may be
    /// restarted at once. The others are in-memory: the delayed-restart rule keeps them
    /// down for longer than `max_ttl` (plus `restart_margin`) after a crash.
    std::vector<bool> persistent;
    std::chrono::milliseconds max_ttl{1000};
    std::chrono::milliseconds restart_margin{250};
    /// false: restart in-memory nodes as soon as persistent ones, breaking the
    /// delayed-restart rule on purpose; only the clients' restart quarantine
    /// (restart_quarantine_ms, enforced on seeing a new run_id) then protects the locks.
    bool delay_in_memory_restarts = true;
    /// Latency per direction at or above which a node counts as impaired (its round
    /// trip then exceeds the clients' request timeout).
    std::chrono::milliseconds impairing_latency{25};
    /// At most this many nodes impaired at once; unset: a minority ((N-1)/2). More
    /// than a minority gives up liveness on purpose (locks get lost, acquisitions
    /// fail), and safety must hold all the same.
    std::optional<std::size_t> max_impaired;
};

class fault_injector {
public:
    /// `log` receives one line per fault, stamped with monotonic_ns(); may be null.
    fault_injector(std::vector<redlock_test::redis_server>& nodes,
                   std::vector<redlock_test::fault_proxy>& proxies, injector_settings settings,
                   std::uint64_t seed, std::FILE* log);

    /// Ends the faults that are due and, when it is time, injects the next one.
    /// Call it often (every few milliseconds) from the thread that owns the servers.
    void step();
    /// Ends every fault: thaws, heals every proxy, restarts every crashed node (an
    /// in-memory one no sooner than the delayed-restart rule allows, so this may wait).
    void heal_all();

    /// Faults injected so far, by kind: kill, freeze, blackhole, latency, drop, reset;
    /// and "skipped": faults the impairment limit (or a node already impaired) ruled out.
    [[nodiscard]] auto counts() const -> const std::map<std::string, std::uint64_t>& {
        return counts_;
    }
    /// The largest number of nodes impaired at the same time.
    [[nodiscard]] auto max_impaired() const noexcept -> std::size_t { return max_impaired_; }

private:
    using clock = std::chrono::steady_clock;

    struct node_state {
        std::optional<clock::time_point> restart_at;  ///< crashed until then
        std::optional<clock::time_point> thaw_at;     ///< frozen until then
        std::optional<clock::time_point> heal_at;     ///< blackholed until then
        std::optional<clock::time_point> latency_until;
        std::chrono::milliseconds latency{0};
    };

    [[nodiscard]] auto impaired(std::size_t i) const -> bool;
    [[nodiscard]] auto impaired_count() const -> std::size_t;
    [[nodiscard]] auto busy(std::size_t i) const -> bool;
    void end_due(clock::time_point now);
    void restart(std::size_t i);
    void inject(clock::time_point now);
    auto pick_node(bool healthy_only) -> std::optional<std::size_t>;
    auto uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t;
    void note(const char* what, std::size_t node, const std::string& detail = {});

    std::vector<redlock_test::redis_server>& nodes_;
    std::vector<redlock_test::fault_proxy>& proxies_;
    injector_settings settings_;
    std::mt19937_64 rng_;
    std::FILE* log_;
    std::vector<node_state> state_;
    clock::time_point next_fault_;
    std::map<std::string, std::uint64_t> counts_;
    std::size_t max_impaired_ = 0;
};

}  // namespace redlock_torture
