#pragma once

// The fault engine of the torture test and of the CLI stress test: at random intervals
// from a seeded generator, it kills and restarts nodes, freezes and thaws them, and,
// through each node's fault proxy, adds latency, drops connections and blackholes
// traffic. By default never more than a minority of the nodes is impaired at once
// (killed, frozen, blackholed, or slowed past the request timeout), so a majority stays
// reachable and the system should stay live. injector_settings holds what differs
// between the two tests: the mix of faults, their timing, and the CLI stress test's
// stricter limits (cli_stress_faults.hpp).
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

/// The chance of each kind of fault, in percent; what is left to 100 goes to drops.
struct fault_mix {
    int kill = 15;
    int freeze = 20;
    int blackhole = 20;
    int latency = 25;
};

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

    fault_mix mix;
    /// The first fault comes after `first_fault`, each next one 50 ms to `max_gap` later.
    std::chrono::milliseconds first_fault{500};
    std::chrono::milliseconds max_gap{600};
    /// The latencies per direction to pick from, each as likely. 2500 ms: a path slower
    /// than the clients' patience with a connection (they recycle one that owes replies
    /// for 2 s); what it carried arrives after what their next connection carries once
    /// the latency ends.
    std::vector<std::chrono::milliseconds> latencies{
        std::chrono::milliseconds{1},  std::chrono::milliseconds{2},
        std::chrono::milliseconds{5},  std::chrono::milliseconds{10},
        std::chrono::milliseconds{20}, std::chrono::milliseconds{40},
        std::chrono::milliseconds{80}, std::chrono::milliseconds{2500}};
    /// true: one random number per fault, where the latency's span is drawn from its
    /// upper digits instead of a second draw. The CLI stress test's schedule has always
    /// been drawn so; kept, so that its seeds replay the faults they gave before.
    bool one_draw_per_fault = false;
    /// true: latency only on a node with no other fault, and on one node at a time.
    bool lone_latency = false;
    /// true: a connection drop on an unimpaired node needs room under the limit like a
    /// lasting fault (its requests fail at once), and half of the drops go to a
    /// blackholed or slowed node, if there is one: its connections owe replies whose
    /// timeouts are running, and a connection failing while it is being given up on is
    /// where a double uv_close once hid.
    bool aimed_drops = false;
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
    /// Ends every fault: heal_links(), then restart_crashed().
    void heal_all() {
        heal_links();
        restart_crashed();
    }
    /// Thaws every frozen node and heals every proxy; a crashed node stays down.
    void heal_links();
    /// Restarts every crashed node (an in-memory one no sooner than the delayed-restart rule
    /// allows, so this may wait). Throws std::runtime_error if a node cannot be restarted
    /// within 50 attempts.
    void restart_crashed();

    /// Faults injected so far, by kind: kill, freeze, blackhole, latency, drop, reset;
    /// and "skipped": faults the impairment limit (or a node already impaired) ruled out.
    [[nodiscard]] auto counts() const -> const std::map<std::string, std::uint64_t>& {
        return counts_;
    }
    /// Restarts that failed (their port was taken meanwhile) and were tried again.
    [[nodiscard]] auto restart_failures() const noexcept -> std::uint64_t {
        return restart_failures_;
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
    [[nodiscard]] auto restart_delayed(std::size_t i) const -> bool;
    void end_due(clock::time_point now);
    auto restart(std::size_t i) -> bool;
    void inject(clock::time_point now);
    void add_latency(clock::time_point now, std::size_t node, std::int64_t a, std::int64_t b,
                     bool room);
    void drop(std::size_t node, std::int64_t a, bool room);
    void skip(const char* what, std::size_t node);
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
    std::uint64_t restart_failures_ = 0;
    std::size_t max_impaired_ = 0;
};

}  // namespace redlock_torture
