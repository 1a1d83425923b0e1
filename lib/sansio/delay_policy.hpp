#pragma once

// Every delay the client chooses — before a retry, a reconnect, a renewal, or
// while a waiter sleeps until a majority could be free — as pure functions:
// time and randomness come in as values, so each is tested at its bounds
// without a clock (tests/unit/delays_test.cpp).

#include "redlock/config.hpp"
#include "redlock/error.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>

namespace redlock::detail {

class node_outcomes;

/// Uniform in [0, bound] from a random 64-bit value (nothing for bound <= 0).
[[nodiscard]] constexpr auto jitter_of(std::uint64_t random,
                                       std::chrono::milliseconds bound) noexcept
    -> std::chrono::milliseconds {
    if (bound.count() <= 0) return std::chrono::milliseconds{0};
    const auto span = static_cast<std::uint64_t>(bound.count()) + 1;
    return std::chrono::milliseconds{static_cast<std::int64_t>(random % span)};
}

/// Before the next attempt of an acquisition that does not wait in the queue:
/// retry.delay plus up to retry.jitter, so that clients that collided do not
/// collide again in lockstep.
[[nodiscard]] constexpr auto retry_delay(const client_config::retry_policy& retry,
                                         std::uint64_t random) noexcept
    -> std::chrono::milliseconds {
    return retry.delay + jitter_of(random, retry.jitter);
}

/// Before reconnecting after `failures` failed connections in a row (1 for the
/// first): doubling from min_ms up to max_ms, then a random point in the upper
/// half, so that clients cut off together do not come back together.
[[nodiscard]] auto reconnect_delay(unsigned failures, std::uint64_t min_ms, std::uint64_t max_ms,
                                   std::uint64_t random) noexcept -> std::uint64_t;

/// Between two renewals of an auto-renewed lock: a fraction of its TTL, at
/// least 1 ms.
[[nodiscard]] auto renew_interval(std::chrono::milliseconds ttl, double fraction) noexcept
    -> std::chrono::milliseconds;

/// After a renewal that did not reach a majority for lack of answers (not a
/// refusal): try again soon, while the validity lasts.
[[nodiscard]] constexpr auto renew_retry_gap(std::chrono::milliseconds request_timeout) noexcept
    -> std::chrono::milliseconds {
    return std::max(request_timeout * 2, std::chrono::milliseconds{10});
}

/// What a waiting acquisition knows when an attempt has failed.
struct wait_situation {
    errc reason = errc::contended;          ///< why the attempt failed
    const node_outcomes* nodes = nullptr;   ///< what each node answered
    std::span<const long long> holder_ttl;  ///< per node: the holder's TTL in ms (-2: no key)
    bool subscribed = false;                ///< a release notification can reach us
    wait_mode mode = wait_mode::targeted;
    /// A semaphore's attempt: the most nodes that granted one same permit. Nodes that granted
    /// different permits are not free together (each holds its other permits for others), so
    /// of the nodes that granted only these count as free; counting them all made a waiter
    /// look again every 2-5 ms while the permits stayed spread.
    std::optional<std::size_t> granted_alike;
};

/// How long a waiting acquisition sleeps before it looks again, unless a
/// release notification wakes it first: until a majority could be free (the
/// nodes free now, plus those whose holder's key expires first), never longer
/// than half its queue entry's life. `random` spreads the short re-checks.
[[nodiscard]] auto wait_delay(const wait_situation& s, std::chrono::milliseconds waiter_ttl,
                              std::chrono::milliseconds request_timeout,
                              const client_config::retry_policy& retry, std::uint64_t random)
    -> std::chrono::milliseconds;

/// When the next attempt of a failed one starts, if it does: `delay` after
/// `now`, at once if a release arrived meanwhile (`woken`), and never after the
/// wait deadline. No retry when the budget is spent, or when even `shortest`
/// would pass the deadline.
struct retry_decision {
    bool budget_left = false;
    std::chrono::milliseconds delay{0};
    bool woken = false;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    std::chrono::milliseconds shortest{0};
};
[[nodiscard]] auto next_attempt(const retry_decision& d, std::chrono::steady_clock::time_point now)
    -> std::optional<std::chrono::milliseconds>;

}  // namespace redlock::detail
