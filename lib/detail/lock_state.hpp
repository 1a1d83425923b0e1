#pragma once

#include "redlock/lock.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace redlock::detail {

/// What a lock handle and the client share. Written on the loop thread, read
/// from any thread: the mutable parts are atomics.
struct lock_state {
    std::string resource;
    std::string key;    ///< key_prefix + resource
    std::string value;  ///< proof of ownership
    std::chrono::milliseconds ttl{0};
    std::atomic<std::int64_t> valid_until_ns{0};  ///< steady_clock, since its epoch
    std::atomic<bool> released{false};
    std::atomic<bool> lost{false};

    void set_valid_until(std::chrono::steady_clock::time_point t) noexcept {
        valid_until_ns.store(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(),
            std::memory_order_release);
    }
    [[nodiscard]] auto valid_until() const noexcept -> std::chrono::steady_clock::time_point {
        return std::chrono::steady_clock::time_point{
            std::chrono::nanoseconds{valid_until_ns.load(std::memory_order_acquire)}};
    }

    [[nodiscard]] static auto handle(std::shared_ptr<lock_state> state) -> lock {
        return lock{std::move(state)};
    }
    [[nodiscard]] static auto of(const lock& l) noexcept -> const std::shared_ptr<lock_state>& {
        return l.state_;
    }
};

}  // namespace redlock::detail
