// redlock_load's phases: the options they run under, the totals of each mode
// across repetitions, and the runner that drives one warm-up and one measured
// phase of a driver at a time (bounded in count and time).
#pragma once

#include "histogram.hpp"
#include "load/node_stats.hpp"
#include "load/phase.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace redlock::bench {

/// What the command line asked for.
struct options {
    std::string config;
    std::string mode = "both";
    std::string label;
    std::string json_path;
    std::string progress = "auto";
    workload load;
    bool fencing = false;
    bool extend = false;
    double duration_s = 3;
    std::uint64_t ops = 10'000'000;
    double warmup_s = 0.5;
    std::uint64_t warmup_ops = 2000;
    int repeat = 1;
    int sample_ms = 100;
    bool heap_bytes = false;
};

/// One mode's totals across its repetitions.
struct mode_totals {
    std::string name;
    histogram cycle;
    histogram acquire;
    std::vector<double> ops_per_s;
    std::uint64_t completed = 0;
    std::uint64_t failed = 0;
    double seconds = 0;
    double client_cpu = 0;
    double server_cpu = 0;
    std::uint64_t allocs = 0;
    std::uint64_t writes = 0;
    std::uint64_t requests = 0;
    std::uint64_t handoffs = 0;  // acquisitions granted by a hand-off (client_stats::handoffs)
    /// Contended: a holder's release() call to the next holder's grant.
    histogram handoff;
    /// Contended: how long each holder held the lock (the hold's sleep, overshoot included).
    histogram held;
    /// Contended: grants seen before the previous holder had asked to
    /// release (two holders at once: never, for an exclusive lock).
    std::uint64_t overlaps = 0;
    std::map<std::string, std::uint64_t> errors;
    std::map<std::string, std::uint64_t> calls;
    /// Each node's share of `calls` and `server_cpu` (the stats config's nodes, in order).
    std::vector<node_snapshot> per_node;
    std::vector<std::uint64_t> per_worker;  // contended: locks held by each worker
    long rss_before_kib = 0;                // resident before this mode's first phase
    long rss_peak_kib = 0;                  // highest resident seen during its phases
    std::int64_t heap_before = 0;  // with --heap-bytes: bytes in use before the first phase
    std::int64_t heap_peak = 0;    // and the most seen during its phases
};

/// Runs the phases of one invocation, one at a time.
class runner {
public:
    runner(const options& opt, node_stats& nodes);

    /// One warm-up phase (discarded) and one measured phase of `d`, added to `t`.
    void run(driver& d, mode_totals& t, int rep);

private:
    void phase(driver& d, mode_totals& t, int slots, std::uint64_t ops, double seconds,
               const std::string* label);
    void sample(mode_totals& t);
    void progress(const std::string& label, steady::duration elapsed);

    const options& opt_;
    node_stats& nodes_;
    bool tty_ = false;
    phase_gate gate_;
    phase_stats stats_;
};

}  // namespace redlock::bench
