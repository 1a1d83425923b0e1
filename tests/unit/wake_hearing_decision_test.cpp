// When a refused waiter may sleep on the release notification (long), and when
// it must look again soon because a release may have gone unheard: only if every
// subscription was confirmed when its attempt began, is confirmed at the
// refusal, and none was made again in between (acquire_decision::heard_throughout).
// Every combination, on 1, 3 and 5 nodes, for an attempt of its own and for one
// a release of this client began (begin_handoff); without sockets or clocks.
#include "acquire_decision_support.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using redlock::detail::acquire_actions;
using redlock::detail::acquire_decision;
using redlock::detail::acquire_settings;
using namespace redlock_test;

namespace {

// waiting_settings' waiter_ttl is 2 s: the long sleep is at most half of it.

constexpr auto long_sleep = 1000ms;  // waiter_ttl / 2: the holder's 5 s TTL is longer
constexpr auto short_look = 100ms;   // 2 x request_timeout

/// Every node refuses the current attempt (queued, holder's TTL 5 s): the last
/// answer decides, with what `env` says then.
auto refuse_everywhere(acquire_decision& d, const fake_env& env, std::size_t nodes)
    -> acquire_actions {
    acquire_actions a;
    for (std::size_t i = 0; i < nodes; ++i)
        a = d.on_grant(i, {outcome_of(answer::refuse), 0, 5000, true}, env.in());
    return a;
}

struct hearing {
    bool at_start = false;
    bool at_refusal = false;
    bool confirmed_between = false;  // a subscription lost and made again meanwhile
};

}  // namespace

TEST_SUITE("acquire decision: sleeping on the release notification") {
    TEST_CASE("sleeps long only if subscribed from the attempt's start to its refusal") {
        for (const std::size_t nodes : {1U, 3U, 5U}) {
            for (int code = 0; code < 8; ++code) {
                const hearing h{(code & 1) != 0, (code & 2) != 0, (code & 4) != 0};
                CAPTURE(nodes);
                CAPTURE(h.at_start);
                CAPTURE(h.at_refusal);
                CAPTURE(h.confirmed_between);
                fake_env env;
                env.subscribed_now = h.at_start;
                acquire_decision d{waiting_settings(nodes)};
                REQUIRE(d.start(env.in()).send_grants);
                env.t += 2ms;
                env.subscribed_now = h.at_refusal;
                if (h.confirmed_between) ++env.subscriptions_now;
                const acquire_actions a = refuse_everywhere(d, env, nodes);
                REQUIRE(a.retry_after);
                const bool heard = h.at_start && h.at_refusal && !h.confirmed_between;
                CHECK(*a.retry_after == (heard ? long_sleep : short_look));
            }
        }
    }

    TEST_CASE("subscribed only by the refusal: looks again, and the next attempt may sleep") {
        // The old rule's gap: the SUBSCRIBE may have run after the grant queued us,
        // and a release in between published to nobody.
        fake_env env;
        env.subscribed_now = false;
        env.subscriptions_now = 0;
        acquire_decision d{waiting_settings(5)};
        (void)d.start(env.in());
        env.subscribed_now = true;
        env.subscriptions_now = 5;
        acquire_actions a = refuse_everywhere(d, env, 5);
        REQUIRE(a.retry_after);
        CHECK(*a.retry_after == short_look);
        env.t += *a.retry_after;
        a = d.on_retry_timer(env.in());  // begins with every subscription confirmed
        REQUIRE(a.send_grants);
        a = refuse_everywhere(d, env, 5);
        REQUIRE(a.retry_after);
        CHECK(*a.retry_after == long_sleep);
    }

    TEST_CASE("an attempt a release of this client began is judged from its own start") {
        for (int code = 0; code < 8; ++code) {
            const hearing h{(code & 1) != 0, (code & 2) != 0, (code & 4) != 0};
            CAPTURE(h.at_start);
            CAPTURE(h.at_refusal);
            CAPTURE(h.confirmed_between);
            fake_env env;
            acquire_decision d{waiting_settings(3)};
            (void)d.start(env.in());
            acquire_actions a = refuse_everywhere(d, env, 3);
            REQUIRE(a.retry_after);
            env.t += 5ms;
            env.subscribed_now = h.at_start;
            a = d.begin_handoff(env.in());
            REQUIRE(a.cancel_retry_timer);
            env.subscribed_now = h.at_refusal;
            if (h.confirmed_between) ++env.subscriptions_now;
            a = refuse_everywhere(d, env, 3);  // the release's script found us not first
            REQUIRE(a.retry_after);
            const bool heard = h.at_start && h.at_refusal && !h.confirmed_between;
            CHECK(*a.retry_after == (heard ? long_sleep : short_look));
        }
    }

    TEST_CASE("a wake-up while the attempt was in flight retries at once, heard or not") {
        for (const bool subscribed : {false, true}) {
            fake_env env;
            env.subscribed_now = subscribed;
            acquire_decision d{waiting_settings(3)};
            (void)d.start(env.in());
            (void)d.on_wake(env.in());
            const acquire_actions a = refuse_everywhere(d, env, 3);
            REQUIRE(a.retry_after);
            CHECK(*a.retry_after == 0ms);
        }
    }
}
