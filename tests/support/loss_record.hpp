#pragma once

#include "support/wait.hpp"

#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>

namespace redlock_test {

/// What on_lost saw of an auto-renewed lock: how often it was called and, from
/// the first call, the error, when, and what the lock said of itself then.
/// Declare it before the client, so that it outlives any callback.
struct loss_record {
    std::atomic<int> calls{0};
    countdown arrived{1};
    std::mutex mutex;
    std::optional<redlock::error> why;
    std::chrono::steady_clock::time_point at{};
    bool lost_flag = false;
    bool token_stopped = false;
    bool still_valid = true;

    /// Lock options that renew automatically and report here.
    auto options(std::chrono::milliseconds ttl) -> redlock::lock_options {
        redlock::lock_options renewed;
        renewed.ttl = ttl;
        renewed.auto_renew = true;
        renewed.on_lost = [this](const redlock::lock& held, const redlock::error& e) {
            auto now = std::chrono::steady_clock::now();
            {
                std::lock_guard guard{mutex};
                if (calls == 0) {
                    at = now;
                    why = e;
                    lost_flag = held.lost();
                    token_stopped = held.lost_token().stop_requested();
                    still_valid = held.valid();
                }
            }
            ++calls;
            arrived.count_down();
        };
        return renewed;
    }
};

}  // namespace redlock_test
