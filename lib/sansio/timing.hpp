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

/// `now + wait`, saturating: a wait of milliseconds::max() means "as long as it takes", and
/// the sum must not overflow the clock's nanoseconds.
[[nodiscard]] constexpr auto deadline_after(std::chrono::steady_clock::time_point now,
                                            milliseconds wait) noexcept
    -> std::chrono::steady_clock::time_point {
    using clock = std::chrono::steady_clock;
    const auto room = std::chrono::duration_cast<milliseconds>(clock::time_point::max() - now);
    return wait >= room ? clock::time_point::max() : now + wait;
}

/// How long a lock decided `elapsed` after its first request was sent may be
/// relied upon. Zero or negative means it must be treated as not held.
[[nodiscard]] constexpr auto validity(milliseconds ttl, nanoseconds elapsed, double drift_factor,
                                      milliseconds drift_floor) noexcept -> milliseconds {
    return ttl - std::chrono::ceil<milliseconds>(elapsed) -
           clock_drift(ttl, drift_factor, drift_floor);
}

}  // namespace redlock::detail
