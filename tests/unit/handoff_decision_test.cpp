// The acquisition decision's two contention paths added for the hand-off:
// an attempt granted by another holder's release (begin_handoff), and a
// waiter's loss heard out before it releases anything (loss_grace). Every
// order of answers on 3 and 5 nodes, without sockets or clocks.
#include "acquire_decision_support.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::detail::acquire_actions;
using redlock::detail::acquire_decision;
using redlock::detail::acquire_settings;
using redlock::detail::grant_answer;
using namespace redlock_test;

namespace {

/// A waiter whose first attempt was refused everywhere: it sleeps, queued.
auto sleeping_waiter(acquire_decision& d, const fake_env& env, std::size_t nodes) -> void {
    (void)d.start(env.in());
    acquire_actions a;
    for (std::size_t i = 0; i < nodes; ++i)
        a = d.on_grant(i, {outcome_of(answer::refuse), 0, 5000, true}, env.in());
    REQUIRE(a.retry_after);
    REQUIRE(d.current_phase() == acquire_decision::phase::sleeping);
}

/// What a node's hand-off answer means to the successor: 2 granted, else still queued.
auto handoff_answer(answer a) -> grant_answer {
    grant_answer g{outcome_of(a)};
    if (a == answer::refuse) g.queued = true;
    return g;
}

}  // namespace

TEST_SUITE("acquire decision: hand-off and loss grace") {
    TEST_CASE("a hand-off is an attempt that sends nothing, decided like any other") {
        for (const std::size_t nodes : {3U, 5U}) {
            for_each_sequence(nodes, [&](const std::vector<answer>& answers, std::size_t) {
                fake_env env;
                acquire_decision d{waiting_settings(nodes)};
                sleeping_waiter(d, env, nodes);
                const auto before = d.attempt();
                const acquire_actions begun = d.begin_handoff(env.in());
                CHECK(begun.cancel_retry_timer);  // the release is our attempt now
                CHECK_FALSE(begun.send_grants);
                CHECK(d.attempt() == before + 1);
                CHECK_FALSE(d.can_take_handoff());
                CHECK_FALSE(d.begin_handoff(env.in()).cancel_retry_timer);  // not twice
                env.t += 3ms;  // the release's round trip
                acquire_actions a;
                std::vector<answer> seen;
                bool lost_before = false;
                for (std::size_t i = 0; i < nodes; ++i) {
                    seen.push_back(answers[i]);
                    a = d.on_grant(i, handoff_answer(answers[i]), env.in());
                    const verdict expected = rule(nodes, seen);
                    const bool newly_lost = expected == verdict::lost && !lost_before;
                    lost_before = expected == verdict::lost;
                    if (expected == verdict::won) {
                        REQUIRE(a.end == acquire_actions::ending::granted);
                        // Validity counts from before the release was sent.
                        CHECK(a.validity <= 10'000ms - 3ms);
                        CHECK_FALSE(a.send_releases);
                        return;
                    }
                    if (newly_lost && seen.size() < nodes) {
                        CHECK(a.loss_grace);  // the rest are heard out first
                        CHECK_FALSE(a.send_releases);
                    }
                }
                // Lost once all answered: only the nodes that did grant are released.
                CHECK(a.retry_after);
                for (std::size_t i = 0; i < nodes; ++i) {
                    CAPTURE(i);
                    CHECK((d.release_form_of(i) != acquire_decision::release_form::none) ==
                          (answers[i] != answer::refuse));
                }
            });
        }
    }

    TEST_CASE("no hand-off mid-attempt, after cancellation, or for fencing and semaphores") {
        fake_env env;
        acquire_decision granting{waiting_settings(3)};
        (void)granting.start(env.in());
        CHECK_FALSE(granting.can_take_handoff());

        acquire_decision cancelled{waiting_settings(3)};
        sleeping_waiter(cancelled, env, 3);
        (void)cancelled.on_cancel(errc::cancelled);
        CHECK_FALSE(cancelled.can_take_handoff());

        auto fenced = waiting_settings(3);
        fenced.fencing = true;
        acquire_decision fencing{fenced};
        sleeping_waiter(fencing, env, 3);
        CHECK_FALSE(fencing.can_take_handoff());

        auto permits = waiting_settings(3);
        permits.permits = 2;
        acquire_decision semaphore{permits};
        (void)semaphore.start(env.in());
        for (std::size_t i = 0; i < 3; ++i)
            (void)semaphore.on_grant(i, {outcome_of(answer::refuse), 0, 5000, true}, env.in());
        CHECK_FALSE(semaphore.can_take_handoff());
    }

    TEST_CASE("a loss heard out: the grace is as long as the majority took, within bounds") {
        for (const auto took : {0ms, 7ms, 400ms}) {
            fake_env env;
            acquire_decision d{waiting_settings(5)};
            (void)d.start(env.in());
            env.t += took;
            acquire_actions a;
            for (std::size_t i = 0; i < 3; ++i)
                a = d.on_grant(i, {outcome_of(answer::refuse), 0, 5000, true}, env.in());
            REQUIRE(a.loss_grace);
            CHECK(*a.loss_grace == std::clamp(took, 1ms, 50ms));
            // A late grant is released, a late refusal is not; the timer is stopped.
            a = d.on_grant(3, {outcome_of(answer::grant)}, env.in());
            CHECK_FALSE(a.send_releases);
            a = d.on_grant(4, {outcome_of(answer::refuse), 0, 5000, true}, env.in());
            CHECK(a.cancel_retry_timer);
            CHECK(a.send_releases);
            CHECK(d.release_form_of(3) == acquire_decision::release_form::by_sha);
            CHECK(d.release_form_of(4) == acquire_decision::release_form::none);
            CHECK(d.cleanups_pending() == 1);
            CHECK_FALSE(d.on_loss_grace(env.in()).send_releases);  // a stale timer does nothing
        }
    }

    TEST_CASE("cancelled while hearing a loss out: the timer stops, the silent are released") {
        fake_env env;
        acquire_decision d{waiting_settings(5)};
        (void)d.start(env.in());
        for (std::size_t i = 0; i < 3; ++i)
            (void)d.on_grant(i, {outcome_of(answer::refuse), 0, 5000, true}, env.in());
        const acquire_actions a = d.on_cancel(errc::cancelled);
        CHECK(a.cancel_retry_timer);
        CHECK(a.send_releases);
        CHECK(d.release_form_of(3) == acquire_decision::release_form::by_eval);
        CHECK(d.release_form_of(4) == acquire_decision::release_form::by_eval);
    }

    TEST_CASE("a wake-up while hearing a loss out retries at once") {
        fake_env env;
        acquire_decision d{waiting_settings(3)};
        (void)d.start(env.in());
        for (std::size_t i = 0; i < 2; ++i)
            (void)d.on_grant(i, {outcome_of(answer::refuse), 0, 5000, true}, env.in());
        (void)d.on_wake(env.in());
        const acquire_actions a =
            d.on_grant(2, {outcome_of(answer::refuse), 0, 5000, true}, env.in());
        REQUIRE(a.retry_after);
        CHECK(*a.retry_after <= 1ms);
    }
}
