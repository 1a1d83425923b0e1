// Figures of the load generator's process and samples: CPU, load average,
// resident set, the median of repetitions and a histogram as JSON.
#pragma once

#include "histogram.hpp"
#include "load/phase.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace redlock::bench {

/// User + system CPU seconds of this process so far.
[[nodiscard]] auto cpu_now() -> double;
/// The 1-minute load average: how busy the machine was (a noise indicator).
[[nodiscard]] auto load_average() -> double;
/// The most resident this process has been, KiB (getrusage).
[[nodiscard]] auto max_rss_kib() -> long;
/// Resident set size now, from /proc/self/statm.
[[nodiscard]] auto rss_kib() -> long;

/// The time of day, "2026-11-24 08:30 UTC".
[[nodiscard]] auto utc_now() -> std::string;

[[nodiscard]] auto median(std::vector<double> v) -> double;

/// Jain's fairness index of `x` (grants per worker): (sum x)^2 / (n sum x^2),
/// 1 when all are equal, 1/n when one worker has them all; 0 for no grants.
[[nodiscard]] auto jain_index(const std::vector<std::uint64_t>& x) -> double;

/// Hand-off latencies of one phase's holds of one resource.
struct handoff_gaps {
    std::vector<std::uint64_t> nanos;  ///< each grant after the first: from the previous release
    std::vector<std::uint64_t> held;   ///< each hold: its grant to its release() call
    std::uint64_t overlaps = 0;        ///< grants before the previous holder asked to release
};
/// Sorted by grant time, each grant minus the previous hold's release start
/// (where the grant comes after it; otherwise counted as an overlap).
[[nodiscard]] auto handoff_gaps_of(std::vector<hold_span> holds) -> handoff_gaps;

/// count, p50, p90, p99, p99.9, max and mean of `h` (nanoseconds).
[[nodiscard]] auto latency_json(const histogram& h) -> nlohmann::ordered_json;

}  // namespace redlock::bench
