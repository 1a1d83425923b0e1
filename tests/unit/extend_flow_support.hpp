#pragma once

// What the extend_decision tests share: a fixed start time, the settings, a
// lock held until a given time, and the nodes' names.

#include "sansio/extend_decision.hpp"

#include <chrono>
#include <cstddef>
#include <string>

namespace redlock_test::extend_flow {

using namespace std::chrono_literals;
using redlock::detail::extend_actions;
using redlock::detail::extend_lock_view;
using redlock::detail::extend_settings;
using ending = extend_actions::ending;
using time_point = std::chrono::steady_clock::time_point;

inline const time_point t0{std::chrono::seconds{1000}};
inline constexpr extend_settings settings{
    .ttl = 10'000ms, .drift_factor = 0.01, .drift_floor = 2ms};

inline auto held_lock(time_point valid_until) -> extend_lock_view {
    return {.empty = false,
            .resource = "orders:42",
            .released = false,
            .lost = false,
            .adopted = false,
            .valid_until = valid_until};
}

inline auto name_of(std::size_t i) -> std::string {
    return "n" + std::to_string(i);
}

}  // namespace redlock_test::extend_flow
