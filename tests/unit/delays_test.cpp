// Every delay the client chooses, at its bounds, with time and randomness as
// values. The waiting cases replace a wall-clock guard (a waiter that spun
// every 2..5 ms while the holder's node was down; found in torture runs at
// 959e947, fixed in 3279b6d): here every combination of node answers on five
// nodes is checked against the rule "sleep until a majority could be free".
#include "sansio/delay_policy.hpp"
#include "sansio/node_outcomes.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::node_status;
using redlock::wait_mode;
using namespace redlock::detail;

namespace {

const redlock::client_config::retry_policy retry{.attempts = 3, .delay = 200ms, .jitter = 100ms};

// One node's answer to a waiting grant.
struct seen {
    node_status status;
    long long holder_ttl;  // -2: no key
};

auto delay_for(const std::vector<seen>& nodes, bool subscribed, wait_mode mode,
               std::uint64_t random, errc reason = errc::contended,
               std::optional<std::size_t> granted_alike = std::nullopt)
    -> std::chrono::milliseconds {
    node_outcomes outcomes;
    outcomes.reset(nodes.size());
    std::vector<long long> ttl;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        outcomes.set(i, {nodes[i].status, {}});
        ttl.push_back(nodes[i].holder_ttl);
    }
    const wait_situation s{.reason = reason,
                           .nodes = &outcomes,
                           .holder_ttl = ttl,
                           .subscribed = subscribed,
                           .mode = mode,
                           .granted_alike = granted_alike};
    return wait_delay(s, 2000ms, 50ms, retry, random);
}

// The rule, stated independently: the earliest time t (whole ms) at which the
// nodes free now plus those whose holder's key has expired by t make a
// majority; a node that failed or timed out is never free.
auto earliest_majority(const std::vector<seen>& nodes) -> long long {
    const std::size_t needed = nodes.size() / 2 + 1;
    const auto free_at = [&](long long t) {
        std::size_t free = 0;
        for (const auto& n : nodes) {
            if (n.status == node_status::ok) ++free;
            if (n.status == node_status::refused && (n.holder_ttl == -2 || n.holder_ttl < t))
                ++free;
        }
        return free;
    };
    // The count changes only at 0 and just after a key expires: try those, earliest first.
    std::vector<long long> moments{0};
    for (const auto& n : nodes) {
        if (n.holder_ttl > 0) moments.push_back(n.holder_ttl + 1);
    }
    std::sort(moments.begin(), moments.end());
    for (const long long t : moments) {
        if (free_at(t) >= needed) return t;
    }
    return std::numeric_limits<long long>::max();
}

}  // namespace

TEST_SUITE("delays: waiting") {
    TEST_CASE("a waiter does not spin while the holder's node is down") {
        // The holder owns nodes 0 and 1 for 10 s, node 2 is down, 3 and 4 are
        // free: no majority until the holder lets go. Sleep on the notification
        // (at most half the queue entry's life), not 2..5 ms.
        const std::vector<seen> nodes{{node_status::refused, 10'000},
                                      {node_status::refused, 10'000},
                                      {node_status::unreachable, -2},
                                      {node_status::ok, -2},
                                      {node_status::ok, -2}};
        for (const std::uint64_t r : {0ULL, 1ULL, 3ULL, ~0ULL}) {
            CHECK(delay_for(nodes, true, wait_mode::targeted, r) == 1000ms);
        }
    }

    TEST_CASE("a semaphore's waiter does not spin while the permits stay spread over the nodes") {
        // K = 2: nodes 0 and 1 granted permit 0, nodes 2 and 3 permit 1 (each holds the other
        // permit for someone else), node 4 refused with both held for 700 ms more. Four nodes
        // granted, but no permit on three: nothing is free on a majority until node 4's holder
        // lets go (or a release wakes us). Counted as four free nodes, it looked again every
        // 2-5 ms: 506 attempts in 2 s in a run with fragmented permits.
        const std::vector<seen> nodes{{node_status::ok, -2},
                                      {node_status::ok, -2},
                                      {node_status::ok, -2},
                                      {node_status::ok, -2},
                                      {node_status::refused, 700}};
        for (const std::uint64_t r : {0ULL, 1ULL, 3ULL, ~0ULL}) {
            CHECK(delay_for(nodes, true, wait_mode::targeted, r, errc::contended, 2U) == 701ms);
            CHECK(delay_for(nodes, true, wait_mode::broadcast, r, errc::contended, 2U) == 701ms);
            // A majority of one permit: free, look again shortly.
            CHECK(delay_for(nodes, true, wait_mode::targeted, r, errc::contended, 3U) ==
                  std::chrono::milliseconds{2 + static_cast<long long>(r % 4)});
        }
        // Without the permit count (an exclusive lock), four granted nodes are free.
        CHECK(delay_for(nodes, true, wait_mode::targeted, 0) == 2ms);
    }

    TEST_CASE("on five nodes, every answer pattern sleeps until a majority could be free") {
        const seen kinds[] = {{node_status::ok, -2},          {node_status::refused, -2},
                              {node_status::refused, 40},     {node_status::refused, 700},
                              {node_status::refused, 5'000},  {node_status::timeout, -2},
                              {node_status::unreachable, -2}, {node_status::error, -2}};
        constexpr std::size_t k = std::size(kinds);
        std::size_t cases = 0;
        std::vector<seen> nodes(5, kinds[0]);
        for (std::size_t code = 0; code < k * k * k * k * k; ++code) {
            std::size_t c = code;
            for (auto& n : nodes) {
                n = kinds[c % k];
                c /= k;
            }
            for (const wait_mode mode : {wait_mode::targeted, wait_mode::fair}) {
                for (const std::uint64_t r : {0ULL, 2ULL, ~0ULL}) {
                    ++cases;
                    const auto d = delay_for(nodes, true, mode, r);
                    const long long t = earliest_majority(nodes);
                    INFO("case " << code << " mode " << static_cast<int>(mode));
                    CHECK(d >= 1ms);
                    CHECK(d <= 1000ms);  // half of waiter_ttl: the queue entry stays alive
                    if (t == 0) {
                        // A majority is free already: a waiter ahead of us (fair)
                        // will tell us; otherwise keys were expiring as we asked.
                        CHECK(d ==
                              (mode == wait_mode::fair
                                   ? 1000ms
                                   : std::chrono::milliseconds{2 + static_cast<long long>(r % 4)}));
                    } else if (t != std::numeric_limits<long long>::max()) {
                        // Never before a majority could be free: no spinning.
                        CHECK(d.count() == std::min<long long>(1000, t));
                    } else {
                        // Failed nodes keep a majority out of reach even when every
                        // key has expired: look again once the last one has.
                        long long last = -1;
                        for (const auto& n : nodes) {
                            if (n.status == node_status::refused)
                                last = std::max(last, n.holder_ttl);
                        }
                        CHECK(d.count() == (last > 0 ? std::min<long long>(1000, last + 1) : 1000));
                    }
                }
            }
        }
        CHECK(cases == 32'768U * 6U);
    }

    TEST_CASE("until the subscriptions are confirmed, a waiter checks back within 100 ms") {
        const std::vector<seen> nodes{{node_status::refused, 10'000},
                                      {node_status::refused, 10'000},
                                      {node_status::refused, 10'000}};
        CHECK(delay_for(nodes, true, wait_mode::targeted, 0) == 1000ms);
        CHECK(delay_for(nodes, false, wait_mode::targeted, 0) == 100ms);  // 2 x request_timeout
    }

    TEST_CASE("a failure other than contention retries after retry.delay + jitter, capped") {
        const std::vector<seen> nodes{
            {node_status::timeout, -2}, {node_status::timeout, -2}, {node_status::ok, -2}};
        CHECK(delay_for(nodes, true, wait_mode::targeted, 0, errc::quorum_unreachable) == 200ms);
        CHECK(delay_for(nodes, true, wait_mode::targeted, 100, errc::quorum_unreachable) == 300ms);
        CHECK(delay_for(nodes, false, wait_mode::targeted, 100, errc::quorum_unreachable) == 100ms);
    }
}

TEST_SUITE("delays: retry, renewal, next attempt") {
    TEST_CASE("retry delay is delay plus a jitter in [0, jitter]") {
        CHECK(retry_delay(retry, 0) == 200ms);
        CHECK(retry_delay(retry, 100) == 300ms);
        CHECK(retry_delay(retry, 101) == 200ms);
        for (std::uint64_t r = ~0ULL - 300; r != 0; ++r) {
            const auto d = retry_delay(retry, r);
            CHECK((d >= 200ms && d <= 300ms));
        }
        CHECK(retry_delay({.attempts = 1, .delay = 5ms, .jitter = 0ms}, ~0ULL) == 5ms);
        CHECK(jitter_of(12345, -3ms) == 0ms);
    }

    TEST_CASE(
        "renewal cadence: a fraction of the ttl, at least 1 ms, retries within the validity") {
        CHECK(renew_interval(30'000ms, 1.0 / 3.0) == 10'000ms);
        CHECK(renew_interval(1ms, 1.0 / 3.0) == 1ms);
        CHECK(renew_interval(10ms, 0.25) == 3ms);  // rounded up, never 0
        CHECK(renew_retry_gap(50ms) == 100ms);
        CHECK(renew_retry_gap(1ms) == 10ms);
    }

    TEST_CASE("next attempt: after the delay, at once if woken, never past the deadline") {
        const auto now = std::chrono::steady_clock::time_point{std::chrono::seconds{50}};
        CHECK_FALSE(next_attempt(
            {.budget_left = false, .delay = 10ms, .woken = false, .deadline = {}, .shortest = 0ms},
            now));
        CHECK(next_attempt({.budget_left = true,
                            .delay = 10ms,
                            .woken = false,
                            .deadline = {},
                            .shortest = 0ms},
                           now) == 10ms);
        CHECK(next_attempt({.budget_left = true,
                            .delay = 10ms,
                            .woken = true,
                            .deadline = {},
                            .shortest = 0ms},
                           now) == 0ms);
        // The last attempt starts at the deadline, not after it.
        CHECK(next_attempt({.budget_left = true,
                            .delay = 500ms,
                            .woken = false,
                            .deadline = now + 120ms,
                            .shortest = 1ms},
                           now) == 120ms);
        // Even the shortest wait would pass the deadline: give up now.
        CHECK_FALSE(next_attempt({.budget_left = true,
                                  .delay = 1ms,
                                  .woken = false,
                                  .deadline = now + 200ms,
                                  .shortest = 200ms},
                                 now));
        CHECK_FALSE(next_attempt(
            {.budget_left = true, .delay = 1ms, .woken = false, .deadline = now, .shortest = 0ms},
            now));
        // A deadline at the end of time (max_wait = milliseconds::max()) does not overflow.
        CHECK(next_attempt({.budget_left = true,
                            .delay = 7ms,
                            .woken = false,
                            .deadline = std::chrono::steady_clock::time_point::max(),
                            .shortest = 1ms},
                           now) == 7ms);
    }
}
