#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

/// Largest TTL a lock may ask for: the config's cap, about 24.8 days, and far from
/// overflowing a steady_clock deadline computed from it.
inline constexpr milliseconds max_ttl{2'147'483'647};

/// Smallest majority of `nodes`.
[[nodiscard]] constexpr auto quorum(std::size_t nodes) noexcept -> std::size_t {
    return nodes / 2 + 1;
}

/// Allowance for the nodes' clocks running at a different rate from ours, plus
/// a floor for Redis' expiry granularity.
[[nodiscard]] constexpr auto clock_drift(milliseconds ttl, double factor,
                                         milliseconds floor) noexcept -> milliseconds {
    // Rounded up: every rounding in this file must shorten validity, never extend it.
    const double scaled = static_cast<double>(ttl.count()) * factor;
    auto whole = static_cast<milliseconds::rep>(scaled);
    if (static_cast<double>(whole) < scaled) ++whole;
    return milliseconds{whole} + floor;
}

/// How long a lock decided `elapsed` after its first request was sent may be
/// relied upon. Zero or negative means it must be treated as not held.
[[nodiscard]] constexpr auto validity(milliseconds ttl, nanoseconds elapsed, double drift_factor,
                                      milliseconds drift_floor) noexcept -> milliseconds {
    return ttl - std::chrono::ceil<milliseconds>(elapsed) -
           clock_drift(ttl, drift_factor, drift_floor);
}

}  // namespace redlock::detail
