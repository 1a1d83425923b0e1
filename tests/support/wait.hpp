#pragma once

// Every bound here is taken as given: pass scaled(bound) (support/slowdown.hpp, included) for
// what an idle plain build needs, so that sanitizer builds and loaded machines get room too.

#include "support/slowdown.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <utility>

namespace redlock_test {

/// Polls `predicate` every 5 ms until it holds or `timeout` has passed, and returns
/// its last value. For eventual assertions on state held elsewhere (keys on a server,
/// a lock's validity window), never as a substitute for awaiting a completion.
template <class P>
[[nodiscard]] auto wait_until(std::chrono::milliseconds timeout, P&& predicate) -> bool {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        bool holds = static_cast<bool>(predicate());
        if (holds || std::chrono::steady_clock::now() >= deadline) return holds;
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
}

/// How long since `start`, in whole milliseconds.
[[nodiscard]] inline auto elapsed_since(std::chrono::steady_clock::time_point start)
    -> std::chrono::milliseconds {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
}

/// True when `predicate` holds at every poll (each 5 ms) for the whole of `period`:
/// the converse of wait_until, for "nothing shows up" assertions.
template <class P>
[[nodiscard]] auto holds_for(std::chrono::milliseconds period, P&& predicate) -> bool {
    return !wait_until(period, [&] { return !static_cast<bool>(predicate()); });
}

/// Counts completions signalled from other threads (callbacks on a client's loop
/// thread) so that the test thread can await all of them, with a bound, instead of
/// sleeping. count_down() may be called from any thread.
class countdown {
public:
    explicit countdown(std::size_t expected) : left_{expected} {}

    void count_down() {
        std::lock_guard held{mutex_};
        if (left_ > 0 && --left_ == 0) done_.notify_all();
    }

    /// True once count_down() was called `expected` times; false if `timeout` passed first.
    [[nodiscard]] auto wait_for(std::chrono::milliseconds timeout) -> bool {
        std::unique_lock held{mutex_};
        return done_.wait_for(held, timeout, [this] { return left_ == 0; });
    }

    [[nodiscard]] auto left() -> std::size_t {
        std::lock_guard held{mutex_};
        return left_;
    }

private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::size_t left_;
};

}  // namespace redlock_test
