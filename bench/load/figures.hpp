// Figures of the load generator's process and samples: CPU, load average,
// resident set, the median of repetitions and a histogram as JSON.
#pragma once

#include "histogram.hpp"

#include <nlohmann/json.hpp>

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

/// count, p50, p90, p99, p99.9, max and mean of `h` (nanoseconds).
[[nodiscard]] auto latency_json(const histogram& h) -> nlohmann::ordered_json;

}  // namespace redlock::bench
