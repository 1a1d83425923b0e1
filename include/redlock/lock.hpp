#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace redlock {

namespace detail {
struct lock_state;
}

class lock;
struct error;

/// Per-acquisition choices. Every unset field takes the client's configured default.
struct lock_options {
    std::optional<std::chrono::milliseconds> ttl{};
    /// Total attempts, the first included. When only `max_wait` is set, attempts
    /// are unlimited until the wait deadline.
    std::optional<int> attempts{};
    /// Give up once this much time has passed since the call (monotonic clock).
    std::optional<std::chrono::milliseconds> max_wait{};
};

/// A held (or once-held) distributed lock.
///
/// A cheap, copyable handle onto state shared with the client: copies observe
/// the same validity deadline. It is not an RAII object; see redlock::guard.
/// All members are safe to call from any thread.
class lock {
public:
    lock() = default;  ///< an empty handle: valid() is false

    [[nodiscard]] auto resource() const -> const std::string&;
    /// The random proof of ownership (32 hex digits, 128 bits from getrandom()).
    [[nodiscard]] auto value() const -> const std::string&;
    /// End of the validity window on the monotonic clock: wall-clock jumps on
    /// this host neither shorten nor stretch it.
    [[nodiscard]] auto valid_until() const noexcept -> std::chrono::steady_clock::time_point;
    /// Time left before valid_until(), or zero.
    [[nodiscard]] auto remaining() const noexcept -> std::chrono::milliseconds;
    /// True while the validity window is open and the lock was neither released
    /// nor marked lost. Only act on the protected resource while this is true.
    [[nodiscard]] auto valid() const noexcept -> bool;
    [[nodiscard]] auto empty() const noexcept -> bool { return !state_; }

private:
    friend struct detail::lock_state;
    explicit lock(std::shared_ptr<detail::lock_state> state) noexcept : state_{std::move(state)} {}

    std::shared_ptr<detail::lock_state> state_;
};

}  // namespace redlock
