#pragma once

// lock_options for the lock-kind tests: one attempt unless told to wait.

#include <redlock/lock.hpp>

#include <chrono>

namespace redlock_test {

/// A reader (lock_options::shared), one attempt.
inline auto reader_options(std::chrono::milliseconds ttl = std::chrono::milliseconds{2000})
    -> redlock::lock_options {
    redlock::lock_options o;
    o.shared = true;
    o.ttl = ttl;
    o.attempts = 1;
    return o;
}

/// A writer (an exclusive lock), one attempt.
inline auto writer_options(std::chrono::milliseconds ttl = std::chrono::milliseconds{2000})
    -> redlock::lock_options {
    redlock::lock_options o;
    o.ttl = ttl;
    o.attempts = 1;
    return o;
}

/// One of `k` permits, one attempt.
inline auto permit_options(int k) -> redlock::lock_options {
    redlock::lock_options o;
    o.permits = k;
    o.attempts = 1;
    return o;
}

/// `o`, waiting up to `max_wait` (queued, woken by releases) instead of one attempt.
inline auto waiting(redlock::lock_options o, std::chrono::milliseconds max_wait)
    -> redlock::lock_options {
    o.attempts.reset();
    o.max_wait = max_wait;
    return o;
}

}  // namespace redlock_test
