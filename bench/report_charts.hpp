// The report's two figures, throughput and latency by locks in flight, as SVG documents.
#pragma once

#include "report_input.hpp"

#include <string>

namespace redlock::bench {

/// Locks per second by locks in flight: library, raw ceiling, hiredis async.
[[nodiscard]] auto throughput_svg(const results& r) -> std::string;
/// Cycle latency percentiles by locks in flight (log scale): library and raw.
[[nodiscard]] auto latency_svg(const results& r) -> std::string;

}  // namespace redlock::bench
