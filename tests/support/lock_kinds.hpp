#pragma once

// lock_options for the lock-kind tests: one attempt unless told to wait.

#include "support/cluster.hpp"
#include "support/redis_server.hpp"

#include <redlock/lock.hpp>

#include <chrono>
#include <string>

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

/// How long `value` has left as a reader of the lock key `lock_key` on `server`,
/// in ms; -2 when it is not a live reader there. Readers are the sorted set
/// "<lock key>|readers", scored by the end of each hold on the node's clock.
inline auto reader_ms_left(const redis_server& server, const std::string& lock_key,
                           const std::string& value) -> long long {
    const auto left =
        server.command({"EVAL",
                        "local t = redis.call('TIME') "
                        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
                        "local s = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1])) "
                        "if not s or s <= now then return -2 end "
                        "return math.floor(s - now)",
                        "1", lock_key + "|readers", value});
    return left ? std::stoll(*left) : -2;
}

/// On how many running, unfrozen servers `value` is a live reader of `lock_key`.
inline auto count_reading(const cluster& nodes, const std::string& lock_key,
                          const std::string& value) -> int {
    int reading = 0;
    for (const auto& server : nodes) {
        if (server.running() && !server.frozen() && reader_ms_left(server, lock_key, value) > 0)
            ++reading;
    }
    return reading;
}

/// Leaves on `server` what a reader's grant would: the marker and `value` in
/// the readers' set for `ms`.
inline void plant_reader(const redis_server& server, const std::string& lock_key,
                         const std::string& value, long long ms) {
    (void)server.command({"EVAL",
                          "local t = redis.call('TIME') "
                          "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
                          "redis.call('SET', KEYS[1], '~readers', 'PX', ARGV[2]) "
                          "redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1]) "
                          "redis.call('PEXPIRE', KEYS[2], ARGV[2]) return 1",
                          "2", lock_key, lock_key + "|readers", value, std::to_string(ms)});
}

}  // namespace redlock_test
