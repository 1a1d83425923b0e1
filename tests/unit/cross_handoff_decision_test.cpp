// The hand-off across clients, as the waiter's decision counts it: a release of
// any client sets the key to the value the waiter's attempt offered where it is
// first in line, and says so by pub/sub (on_handed). Every answer (grant,
// refusal that queues us, error, timeout) on 1, 3 and 5 nodes, every subset of
// nodes that send a hand-off message, in four orders of replies and messages:
// the decision never holds without a majority of nodes holding its value, counts
// the validity from the attempt's start, and holds whenever a majority handed.
#include "acquire_decision_support.hpp"

#include <doctest/doctest.h>

#include <functional>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::detail::acquire_actions;
using redlock::detail::acquire_decision;
using redlock::detail::acquire_settings;
using redlock::detail::grant_answer;
using namespace redlock_test;

namespace {

auto offering_settings(std::size_t nodes) -> acquire_settings {
    auto s = plain_settings(nodes);
    s.waiting = true;
    s.offers = true;
    s.max_attempts = 0;
    s.request_timeout = 50ms;
    return s;
}

auto reply_of(answer a) -> grant_answer {
    grant_answer g{outcome_of(a), 0, 5000};
    g.queued = a == answer::refuse;  // a refusal queues us, and leaves this attempt's offer
    return g;
}

enum class order : std::uint8_t {
    messages_first,
    replies_first,
    reply_then_message,
    message_then_reply
};
constexpr order all_orders[] = {order::messages_first, order::replies_first,
                                order::reply_then_message, order::message_then_reply};

/// One attempt played out: which nodes hold its value (granted and not released
/// since, or handed to it where its answer queued it), and how it ended.
struct played {
    bool granted = false;
    std::chrono::milliseconds validity{0};
    std::size_t holders = 0;  // when granted
    bool released_handed = false;
};

auto play(std::size_t nodes, const std::vector<answer>& answers, unsigned heard_mask, order o)
    -> played {
    fake_env env;
    acquire_decision d{offering_settings(nodes)};
    (void)d.start(env.in());
    const auto attempt = d.attempt();
    std::vector<bool> granted_here(nodes, false);  // the node holds the value now
    played result;
    auto after = [&](const acquire_actions& a) {
        if (a.send_releases) {
            for (std::size_t i = 0; i < nodes; ++i)
                if (d.release_form_of(i) != acquire_decision::release_form::none)
                    granted_here[i] = false;
        }
        if (a.end == acquire_actions::ending::granted && !result.granted) {
            result.granted = true;
            result.validity = a.validity;
            for (const bool h : granted_here) result.holders += h ? 1 : 0;
        }
    };
    auto reply = [&](std::size_t i) {
        env.t += 1ms;
        if (answers[i] == answer::grant) granted_here[i] = true;
        after(d.on_grant(i, reply_of(answers[i]), env.in()));
    };
    auto message = [&](std::size_t i) {
        if ((heard_mask & (1U << i)) == 0) return;
        env.t += 1ms;
        // The release set the value only where this attempt's grant queued us (a
        // timed-out one may have: the release that follows it undoes it).
        if (answers[i] == answer::refuse || answers[i] == answer::timeout) granted_here[i] = true;
        after(d.on_handed(i, attempt, env.in()));
    };
    switch (o) {
        case order::messages_first:
            for (std::size_t i = 0; i < nodes; ++i) message(i);
            for (std::size_t i = 0; i < nodes; ++i) reply(i);
            break;
        case order::replies_first:
            for (std::size_t i = 0; i < nodes; ++i) reply(i);
            if (d.current_phase() == acquire_decision::phase::granting)  // hearing a loss out
                after(d.on_loss_grace(env.in()));
            for (std::size_t i = 0; i < nodes; ++i) message(i);
            break;
        case order::reply_then_message:
            for (std::size_t i = 0; i < nodes; ++i) {
                reply(i);
                message(i);
            }
            break;
        case order::message_then_reply:
            for (std::size_t i = 0; i < nodes; ++i) {
                message(i);
                reply(i);
            }
            break;
    }
    // The attempt started at 1000 s; every event moved the clock 1 ms.
    if (result.granted) CHECK(result.validity <= 10'000ms - (env.t - fake_env{}.t));
    return result;
}

}  // namespace

TEST_SUITE("acquire decision: the hand-off across clients") {
    TEST_CASE("never held without a majority holding the value, held when a majority handed") {
        for (const std::size_t nodes : {1U, 3U, 5U}) {
            const std::size_t needed = nodes / 2 + 1;
            for_each_sequence(nodes, [&](const std::vector<answer>& answers, std::size_t) {
                for (unsigned mask = 0; mask < (1U << nodes); ++mask) {
                    std::size_t handed = 0;  // queued there, and handed
                    std::size_t grants = 0;
                    for (std::size_t i = 0; i < nodes; ++i) {
                        grants += answers[i] == answer::grant ? 1 : 0;
                        handed += answers[i] == answer::refuse && (mask & (1U << i)) ? 1 : 0;
                    }
                    for (const order o : all_orders) {
                        CAPTURE(nodes);
                        CAPTURE(mask);
                        CAPTURE(static_cast<int>(o));
                        const played p = play(nodes, answers, mask, o);
                        if (p.granted) {
                            CHECK(p.holders >= needed);
                            CHECK(grants + handed >= needed);
                        }
                        // A majority handed: held, whatever the order.
                        if (handed >= needed) CHECK(p.granted);
                        // Every message before the last reply: the two kinds add up.
                        if (o == order::messages_first && grants + handed >= needed)
                            CHECK(p.granted);
                        if (grants + handed < needed) CHECK_FALSE(p.granted);
                    }
                }
            });
        }
    }

    TEST_CASE("an earlier attempt's hand-off is a wake-up, a timed-out node's is not counted") {
        fake_env env;
        acquire_decision d{offering_settings(3)};
        (void)d.start(env.in());
        for (std::size_t i = 0; i < 3; ++i) (void)d.on_grant(i, reply_of(answer::refuse), env.in());
        REQUIRE(d.current_phase() == acquire_decision::phase::sleeping);
        // The wake-up starts attempt 2; attempt 1's hand-offs then only wake it.
        acquire_actions a = d.on_handed(0, d.attempt() + 7, env.in());
        CHECK(a.send_grants);
        CHECK(d.attempt() == 2);
        a = d.on_handed(1, 1, env.in());
        CHECK(a.end == acquire_actions::ending::none);
        CHECK(d.handed_count() == 0);
        // Attempt 2: one node timed out; its message is not counted.
        a = d.on_grant(0, reply_of(answer::timeout), env.in());
        (void)d.on_handed(0, 2, env.in());
        CHECK(d.handed_count() == 0);
    }

    TEST_CASE("a majority handed after a lost attempt: held, validity from the attempt's start") {
        for (const auto slept : {0ms, 300ms, 9'990ms}) {
            CAPTURE(slept.count());
            fake_env env;
            acquire_decision d{offering_settings(5)};
            (void)d.start(env.in());
            const auto start = env.t;
            env.t += 2ms;
            for (std::size_t i = 0; i < 5; ++i)
                (void)d.on_grant(i, reply_of(i == 0 ? answer::grant : answer::refuse), env.in());
            REQUIRE(d.current_phase() == acquire_decision::phase::sleeping);
            env.t += slept;
            acquire_actions a;
            for (std::size_t i = 1; i < 4; ++i) a = d.on_handed(i, 1, env.in());
            CHECK(a.cancel_retry_timer);
            const auto v = 10'000ms - std::chrono::ceil<std::chrono::milliseconds>(env.t - start);
            if (slept < 9'000ms) {
                REQUIRE(a.end == acquire_actions::ending::granted);
                CHECK(a.validity <= v);
                CHECK(d.handed_count() == 3);
            } else {
                // Too little left: retried, and the handed keys are kept for the next
                // attempt's grant to take over (they are ours: leaving would release them).
                CHECK(a.end == acquire_actions::ending::none);
                CHECK(a.retry_after);
                for (std::size_t i = 1; i < 4; ++i)
                    CHECK(d.release_form_of(i) == acquire_decision::release_form::none);
            }
        }
    }

    TEST_CASE("given up with hand-offs unheard: the queue is left (which releases them)") {
        fake_env env;
        acquire_decision d{offering_settings(3)};
        (void)d.start(env.in());
        for (std::size_t i = 0; i < 3; ++i) (void)d.on_grant(i, reply_of(answer::refuse), env.in());
        (void)d.on_handed(0, 1, env.in());
        const acquire_actions a = d.on_cancel(errc::cancelled);
        CHECK(a.send_dequeues);
        CHECK_FALSE(d.on_handed(1, 1, env.in()).send_grants);  // cancelled: nothing more
    }

    TEST_CASE("no offers, no hand-off counted: a hand-off attempt of this client, or offers off") {
        fake_env env;
        auto s = offering_settings(3);
        s.offers = false;
        acquire_decision off{s};
        (void)off.start(env.in());
        (void)off.on_grant(0, reply_of(answer::refuse), env.in());
        (void)off.on_handed(0, 1, env.in());
        CHECK(off.handed_count() == 0);

        acquire_decision d{offering_settings(3)};
        (void)d.start(env.in());
        for (std::size_t i = 0; i < 3; ++i) (void)d.on_grant(i, reply_of(answer::refuse), env.in());
        (void)d.begin_handoff(env.in());  // attempt 2 is a release's script: it offered nothing
        grant_answer queued{outcome_of(answer::refuse)};
        queued.queued = true;
        (void)d.on_grant(0, queued, env.in());
        const acquire_actions a = d.on_handed(0, 2, env.in());
        CHECK(d.handed_count() == 0);
        CHECK(a.end == acquire_actions::ending::none);
    }
}
