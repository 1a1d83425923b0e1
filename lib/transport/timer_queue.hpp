#pragma once

#include "transport/close_callbacks.hpp"
#include "transport/uv_handle.hpp"

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

namespace redlock::detail {

/// Many one-shot timers on one uv_timer_t: retry delays, renewals. Operations
/// hold a key, not a handle, so nothing of theirs needs closing.
class timer_queue {
public:
    using key = std::pair<std::uint64_t, std::uint64_t>;  // (deadline ms of uv_now, sequence)

    explicit timer_queue(uv_loop_t* loop);
    timer_queue(const timer_queue&) = delete;
    auto operator=(const timer_queue&) -> timer_queue& = delete;

    /// Runs `fn` once on the loop thread after `delay`.
    auto schedule(std::chrono::milliseconds delay, std::function<void()> fn) -> key;
    /// True if the timer was pending (and now never runs).
    auto cancel(const key& k) -> bool;
    [[nodiscard]] auto size() const noexcept -> std::size_t { return entries_.size(); }
    /// The loop's clock (uv_now), in milliseconds.
    [[nodiscard]] auto now() const noexcept -> std::uint64_t { return uv_now(loop_); }

    /// Closes the handle; pending timers are dropped without running. `done`
    /// runs once the handle's memory may be freed. Idempotent: a second call's
    /// `done` runs once the handle is closed (at once if it already is).
    void close(std::function<void()> done);

private:
    using timer_handle = uv_handle<uv_timer_t, timer_queue>;
    static void on_timer(uv_timer_t* handle);
    void arm();

    uv_loop_t* loop_;
    timer_handle timer_{*this};
    std::map<key, std::function<void()>> entries_;
    std::uint64_t sequence_ = 0;
    std::uint64_t armed_for_ = 0;
    bool closed_ = false;
    close_callbacks on_closed_;
};

}  // namespace redlock::detail
