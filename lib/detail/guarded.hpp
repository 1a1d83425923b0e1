#pragma once

#include <cstdio>
#include <exception>
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

}  // namespace redlock::detail
