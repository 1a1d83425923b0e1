#pragma once

// redlock_election_bench's parts (bench/election_bench.cpp): the failover
// trials (election_failover.cpp) and the overhead rounds
// (election_overhead.cpp). Issue 28, item 6; docs/benchmarks.md, "Leader
// election: failover and overhead".

#include <nlohmann/json.hpp>
#include <redlock/redlock.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

namespace redlock::bench {

struct election_options {
    std::string config = "configs/local.json";
    int ttl_ms = 1000;
    int trials = 30;        ///< failover trials
    int max_seconds = 240;  ///< the failover trials stop starting past this
    int iterations = 200;   ///< overhead: cycles of each variant
    int warmup = 10;        ///< overhead: cycles of each variant not counted
    int request_timeout_ms = 0;
    std::string only;  ///< overhead: this variant alone (for callgrind)
    bool failover = true;
    bool overhead = true;
    std::string lead;      ///< helper mode: lead this election until killed
    int lead_life_s = 60;  ///< helper mode: resign and exit after this long
    std::string self;      ///< this binary, for the helper
};

using steady = std::chrono::steady_clock;

inline auto ms_between(steady::time_point a, steady::time_point b) -> double {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

/// The nearest-rank quantile q of `v` (0 when empty): with 30 samples p99 is
/// the largest.
inline auto quantile(std::vector<double> v, double q) -> double {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

inline auto round3(double v) -> double {
    return static_cast<double>(std::llround(v * 1000)) / 1000;
}

/// {"p50", "p99", "min", "max", "n"} of `v`, in ms.
inline auto summary(const std::vector<double>& v) -> nlohmann::ordered_json {
    return {{"p50", round3(quantile(v, 0.5))},
            {"p99", round3(quantile(v, 0.99))},
            {"min", round3(quantile(v, 0))},
            {"max", round3(quantile(v, 1))},
            {"n", v.size()}};
}

/// Waits (at most 5 s) until every node is connected.
inline auto all_connected(const client& c) -> bool {
    for (int i = 0; i < 500 && c.stats().nodes_connected < c.node_count(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    return c.stats().nodes_connected == c.node_count();
}

/// Helper mode: campaigns for o.lead, writes its term on stdout, then leads
/// until killed (or o.lead_life_s). The exit status says why it stopped.
auto lead_until_killed(const election_options& o, const client_config& config) -> int;

/// The failover trials: {"trials": [...], summaries}; "ok" false when a
/// standby did not win, or won a term not above the crashed leader's.
auto failover_trials(const election_options& o, const client_config& config)
    -> nlohmann::ordered_json;

/// The uncontended overhead: campaign + resign against acquire + release,
/// alternating; plus the round trips (a plain acquire, a leader() read).
auto overhead_rounds(const election_options& o, const client_config& config)
    -> nlohmann::ordered_json;

}  // namespace redlock::bench
