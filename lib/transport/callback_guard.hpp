#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <thread>
#include <utility>

namespace redlock::detail {

/// Calls `fn` where an exception must not escape: every entry point that libuv
/// calls. A user callback that throws is reported on stderr and the library
/// carries on; unwinding through libuv's C frames would be undefined behaviour.
template <class F>
void call_guarded(F&& fn) noexcept {
    try {
        std::forward<F>(fn)();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "redlock: a callback threw and was ignored: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "redlock: a callback threw and was ignored\n");
    }
}

/// Runs `fn` once on a thread of its own: the last resort for a callback that
/// must not run inside the call that started it when no loop is left to run it
/// (a moved-from client, an owned loop that has ended). Should no thread be
/// had, it runs inline: exactly once matters more than where.
inline void run_detached(std::function<void()> fn) noexcept {
    try {
        std::thread{[fn]() { call_guarded(fn); }}.detach();
    } catch (...) {
        call_guarded(fn);
    }
}

}  // namespace redlock::detail
