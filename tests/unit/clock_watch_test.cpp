#include "sansio/clock_watch.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>

using namespace std::chrono_literals;
using redlock::detail::clock_budget;
using redlock::detail::clock_sample;
using redlock::detail::clock_verdict;
using redlock::detail::clock_watch;
using redlock::detail::judge_clock;
using redlock::detail::time_reply_us;
using kind = clock_verdict::kind;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

const steady_clock::time_point watch_t0{std::chrono::hours{1}};
constexpr std::int64_t watch_wall0 =
    1'700'000'000'000'000;  // the node's clock at the reference, in µs

/// A TIME answered `rtt` after being sent at watch_t0 + `at`, saying `node` (µs after watch_wall0).
auto clock_probe(milliseconds at, microseconds node, milliseconds rtt = 0ms) -> clock_sample {
    return {.node_us = watch_wall0 + node.count(),
            .sent = watch_t0 + at,
            .received = watch_t0 + at + rtt};
}

/// The default budget: 1 % of the interval and 2 ms.
constexpr clock_budget default_budget{.drift_factor = 0.01, .floor = 2ms};

}  // namespace

TEST_SUITE("clock_watch") {
    TEST_CASE("a clock that keeps time is fine") {
        const auto v =
            judge_clock(clock_probe(0ms, 0us), clock_probe(3'000ms, 3'000'000us), default_budget);
        CHECK(v.result == kind::fine);
        CHECK(v.allowance == 32ms);  // ceil(3000 * 0.01) + 2
        CHECK_FALSE(v.stepped());
    }

    TEST_CASE("a forward step of a minute is seen and measured") {
        const auto v =
            judge_clock(clock_probe(0ms, 0us), clock_probe(3'000ms, 63'000'000us), default_budget);
        CHECK(v.result == kind::forward);
        CHECK(v.step == 60'000ms);
        CHECK(v.stepped());
    }

    TEST_CASE("a backward step of a minute is seen and measured") {
        const auto v =
            judge_clock(clock_probe(0ms, 0us), clock_probe(3'000ms, -57'000'000us), default_budget);
        CHECK(v.result == kind::backward);
        CHECK(v.step == 60'000ms);
    }

    TEST_CASE("steps just inside and just outside the allowance, both ways") {
        // 3 s apart with no round trip: the allowance is exactly 32 ms.
        const clock_sample ref = clock_probe(0ms, 0us);
        CHECK(judge_clock(ref, clock_probe(3'000ms, 3'032'000us), default_budget).result ==
              kind::fine);
        CHECK(judge_clock(ref, clock_probe(3'000ms, 3'032'001us), default_budget).result ==
              kind::forward);
        CHECK(judge_clock(ref, clock_probe(3'000ms, 2'968'000us), default_budget).result ==
              kind::fine);
        CHECK(judge_clock(ref, clock_probe(3'000ms, 2'967'999us), default_budget).result ==
              kind::backward);
    }

    TEST_CASE("the round trip widens the window: the node read its clock anywhere in it") {
        // Both probes took 100 ms: locally, between 2.9 s and 3.1 s passed.
        const clock_sample ref = clock_probe(0ms, 0us, 100ms);
        // allowance = ceil(3100 * 0.01) + 2 = 33 ms
        CHECK(judge_clock(ref, clock_probe(3'000ms, 3'133'000us, 100ms), default_budget).result ==
              kind::fine);
        CHECK(judge_clock(ref, clock_probe(3'000ms, 3'133'001us, 100ms), default_budget).result ==
              kind::forward);
        CHECK(judge_clock(ref, clock_probe(3'000ms, 2'867'000us, 100ms), default_budget).result ==
              kind::fine);
        CHECK(judge_clock(ref, clock_probe(3'000ms, 2'866'999us, 100ms), default_budget).result ==
              kind::backward);
        // A step smaller than the round trip's doubt is never taken for one.
        CHECK(judge_clock(ref, clock_probe(3'000ms, 3'120'000us, 100ms), default_budget).result ==
              kind::fine);
    }

    TEST_CASE("the step reported is the least the node can have jumped") {
        const auto v = judge_clock(clock_probe(0ms, 0us, 100ms),
                                   clock_probe(3'000ms, 13'100'000us, 100ms), default_budget);
        CHECK(v.result == kind::forward);
        CHECK(v.step == 10'000ms);  // 13.1 s on the node, at most 3.1 s here
    }

    TEST_CASE("the allowance grows with the interval: an hour apart, 36 s of drift is fine") {
        const clock_sample ref = clock_probe(0ms, 0us);
        const auto hour = std::chrono::duration_cast<milliseconds>(1h);
        CHECK(judge_clock(ref, clock_probe(hour, 3'636'002'000us), default_budget).result ==
              kind::fine);
        CHECK(judge_clock(ref, clock_probe(hour, 3'636'002'001us), default_budget).result ==
              kind::forward);
    }

    TEST_CASE("a default_budget of zero drift allows nothing but the round trip") {
        const clock_budget none{.drift_factor = 0.0, .floor = 0ms};
        const clock_sample ref = clock_probe(0ms, 0us, 10ms);
        CHECK(judge_clock(ref, clock_probe(1'000ms, 1'010'000us, 10ms), none).result == kind::fine);
        CHECK(judge_clock(ref, clock_probe(1'000ms, 1'010'001us, 10ms), none).result ==
              kind::forward);
        CHECK(judge_clock(ref, clock_probe(1'000ms, 990'000us, 10ms), none).result == kind::fine);
        CHECK(judge_clock(ref, clock_probe(1'000ms, 989'999us, 10ms), none).result ==
              kind::backward);
    }

    TEST_CASE("a negative default_budget counts as zero") {
        const clock_budget odd{.drift_factor = -1.0, .floor = -5ms};
        const auto v = judge_clock(clock_probe(0ms, 0us), clock_probe(1'000ms, 1'000'000us), odd);
        CHECK(v.result == kind::fine);
        CHECK(v.allowance == 0ms);
    }

    TEST_CASE("every step size on a grid: beyond the allowance is a step, within it is not") {
        const clock_sample ref = clock_probe(0ms, 0us, 4ms);
        for (int gap_ms = 10; gap_ms <= 20'000; gap_ms *= 3) {
            const milliseconds gap{gap_ms};
            const clock_sample at = clock_probe(gap, 0us, 4ms);
            const milliseconds most = gap + 4ms;
            const milliseconds least = gap - 4ms;
            const auto allowance = judge_clock(ref, at, default_budget).allowance;
            for (int step_ms = -30'000; step_ms <= 30'000; step_ms += 7) {
                const microseconds node = gap + milliseconds{step_ms};
                const auto v = judge_clock(ref, clock_probe(gap, node, 4ms), default_budget);
                const bool forward = node > most + allowance;
                const bool backward = node < least - allowance;
                CAPTURE(gap_ms);
                CAPTURE(step_ms);
                CHECK((v.result == kind::forward) == forward);
                CHECK((v.result == kind::backward) == backward);
                CHECK((v.result == kind::fine) == (!forward && !backward));
            }
        }
    }

    TEST_CASE("the watch judges each sample against the one before") {
        clock_watch w;
        CHECK(w.observe(clock_probe(0ms, 0us, 1ms), default_budget).result == kind::first);
        CHECK(w.observe(clock_probe(1'000ms, 1'000'000us, 1ms), default_budget).result ==
              kind::fine);
        const auto stepped = w.observe(clock_probe(2'000ms, 62'000'000us, 1ms), default_budget);
        CHECK(stepped.result == kind::forward);
        CHECK(stepped.step >= 59'990ms);
        // The stepped clock is the reference now: keeping time from there is fine.
        CHECK(w.observe(clock_probe(3'000ms, 63'000'000us, 1ms), default_budget).result ==
              kind::fine);
        REQUIRE(w.reference().has_value());
        CHECK(w.reference()->node_us == watch_wall0 + 63'000'000);
    }

    TEST_CASE("reset forgets the reference: another node's clock owes nothing to the old one") {
        clock_watch w;
        (void)w.observe(clock_probe(0ms, 0us), default_budget);
        w.reset();
        CHECK(w.observe(clock_probe(1'000ms, 500'000'000us), default_budget).result == kind::first);
    }

    TEST_CASE("a sample out of order or answered before it was sent is ignored") {
        clock_watch w;
        (void)w.observe(clock_probe(1'000ms, 0us, 5ms), default_budget);
        // An older probe's late answer (read before the reference's): proves nothing.
        CHECK(w.observe(clock_probe(0ms, 90'000'000us, 1ms), default_budget).result == kind::fine);
        clock_sample backwards = clock_probe(2'000ms, 90'000'000us);
        backwards.received = backwards.sent - 1ms;
        CHECK(w.observe(backwards, default_budget).result == kind::fine);
        REQUIRE(w.reference().has_value());
        CHECK(w.reference()->node_us == watch_wall0);  // unchanged
    }
}

TEST_SUITE("time_reply_us") {
    TEST_CASE("reads Redis's seconds and microseconds") {
        CHECK(time_reply_us("1700000000", "123456") == 1'700'000'000'123'456);
        CHECK(time_reply_us("0", "0") == 0);
        CHECK(time_reply_us("0", "999999") == 999'999);
    }

    TEST_CASE("refuses what is not TIME's answer") {
        CHECK_FALSE(time_reply_us("", "1").has_value());
        CHECK_FALSE(time_reply_us("1", "").has_value());
        CHECK_FALSE(time_reply_us("-1", "0").has_value());
        CHECK_FALSE(time_reply_us("1", "-1").has_value());
        CHECK_FALSE(time_reply_us("1", "1000000").has_value());
        CHECK_FALSE(time_reply_us("1x", "0").has_value());
        CHECK_FALSE(time_reply_us("99999999999999999999", "0").has_value());
        CHECK_FALSE(time_reply_us("9223372036855", "0").has_value());  // overflows in µs
    }

    TEST_CASE("info_time_us reads INFO's server_time_usec, the same clock in one number") {
        using redlock::detail::info_time_us;
        CHECK(info_time_us("1700000000000042") == 1'700'000'000'000'042);
        CHECK(info_time_us("42") == 42);
        CHECK(info_time_us("000000") == 0);
        CHECK_FALSE(info_time_us("soon").has_value());
        CHECK_FALSE(info_time_us("-1700000000000042").has_value());
        CHECK_FALSE(info_time_us("17000000000000x2").has_value());
        CHECK_FALSE(info_time_us("").has_value());
    }
}
