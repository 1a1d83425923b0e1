// acquire_decision, exhaustively: every sequence of grant, refusal, error and
// timeout on 1, 3, 5 and 7 nodes, with the replies that come after the verdict;
// fencing rounds whose counters disagree. No socket, no clock.
#include "acquire_decision_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

using namespace redlock_test;
using redlock::errc;
using release_form = acquire_decision::release_form;

namespace {

struct attempt_result {
    std::size_t decided_after = 0;  // replies heard when the verdict came (0: never)
    acquire_actions decisive;
    bool late_reply_acted = false;
};

// Node i answers seq[order[i]]: the node that answers k-th is order[k].
auto play_grants(acquire_decision& d, const fake_env& env, const std::vector<answer>& seq,
                 const std::vector<std::size_t>& order) -> attempt_result {
    attempt_result r;
    for (std::size_t k = 0; k < seq.size(); ++k) {
        const acquire_actions a =
            d.on_grant(order[k], grant_answer{outcome_of(seq[k]), 0, -2, false}, env.in());
        const bool acted = a.send_grants || a.send_confirms || a.send_releases || a.retry_after ||
                           a.end != acquire_actions::ending::none;
        if (r.decided_after == 0 && acted) {
            r.decided_after = k + 1;
            r.decisive = a;
        } else if (acted) {
            r.late_reply_acted = true;
        }
    }
    return r;
}

auto rotation(std::size_t n, std::size_t shift) -> std::vector<std::size_t> {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shift % n), order.end());
    return order;
}

// The first prefix of `seq` on which the rule decides.
auto rule_step(std::size_t n, const std::vector<answer>& seq) -> std::size_t {
    std::vector<answer> prefix;
    for (std::size_t k = 0; k < seq.size(); ++k) {
        prefix.push_back(seq[k]);
        if (rule(n, prefix) != verdict::pending) return k + 1;
    }
    return 0;
}

}  // namespace

TEST_SUITE("acquire decision: every reply order") {
    TEST_CASE("decides at the first reply that settles the majority, and never before") {
        for (const std::size_t n : {1U, 3U, 5U, 7U}) {
            std::size_t cases = 0;
            for_each_sequence(n, [&](const std::vector<answer>& seq, std::size_t code) {
                ++cases;
                fake_env env;
                acquire_decision d{plain_settings(n)};
                const acquire_actions first = d.start(env.in());
                REQUIRE(first.send_grants);
                const auto order = rotation(n, code);
                env.t += 7ms;  // every reply 7 ms after the first request
                const attempt_result r = play_grants(d, env, seq, order);

                std::vector<answer> heard(
                    seq.begin(), seq.begin() + static_cast<std::ptrdiff_t>(r.decided_after));
                const verdict v = rule(n, heard);
                INFO("n=" << n << " case=" << code);
                REQUIRE(r.decided_after == rule_step(n, seq));
                CHECK_FALSE(r.late_reply_acted);  // replies after the verdict change nothing
                if (v == verdict::won) {
                    CHECK(r.decisive.end == acquire_actions::ending::granted);
                    CHECK_FALSE(r.decisive.send_releases);
                    // ttl 10 s - 7 ms elapsed - (1 % of ttl + 2 ms) drift
                    CHECK(r.decisive.validity == 10'000ms - 7ms - 102ms);
                    return;
                }
                REQUIRE(v == verdict::lost);
                std::size_t failed = 0;
                std::size_t releases = 0;
                for (std::size_t k = 0; k < n; ++k) {
                    const std::size_t node = order[k];
                    const release_form f = d.release_form_of(node);
                    if (k >= r.decided_after) {
                        // No answer yet: it may still grant, so it is released by EVAL.
                        CHECK(f == release_form::by_eval);
                    } else if (seq[k] == answer::refuse) {
                        CHECK(f == release_form::none);  // held by another: nothing to undo
                    } else if (seq[k] == answer::timeout) {
                        CHECK(f == release_form::by_eval);
                    } else {
                        CHECK(f == release_form::by_sha);
                    }
                    if (k < r.decided_after &&
                        (seq[k] == answer::error || seq[k] == answer::timeout))
                        ++failed;
                    if (f != release_form::none) ++releases;
                }
                CHECK(r.decisive.send_releases == (releases > 0));
                // With releases to await, the failure waits for them.
                CHECK((r.decisive.end == acquire_actions::ending::failed) == (releases == 0));
                const errc expected =
                    failed > n - (n / 2 + 1) ? errc::quorum_unreachable : errc::contended;
                CHECK(d.failure_reason() == expected);
                CHECK_FALSE(r.decisive.retry_after);  // one attempt only
                // The failure is reported once the last release is answered, not sooner.
                for (std::size_t i = 0; i < releases; ++i) {
                    const acquire_actions a = d.on_cleanup_answered();
                    CHECK((a.end == acquire_actions::ending::failed) == (i + 1 == releases));
                }
                CHECK(d.current_phase() == acquire_decision::phase::done);
            });
            std::size_t expected_cases = 1;
            for (std::size_t i = 0; i < n; ++i) expected_cases *= 4;
            CHECK(cases == expected_cases);
        }
    }

    TEST_CASE("a failure with nothing to release is reported at once") {
        // Only a node that answered "held by another owner" needs no release;
        // one that has not answered yet may still grant, so it is released.
        fake_env env;
        acquire_decision d{plain_settings(1)};
        (void)d.start(env.in());
        const acquire_actions a = d.on_grant(0, {outcome_of(answer::refuse)}, env.in());
        CHECK_FALSE(a.send_releases);
        CHECK(a.end == acquire_actions::ending::failed);
        CHECK(d.failure_reason() == errc::contended);
    }

    TEST_CASE("a grant decided with no validity left fails as validity_expired and releases") {
        fake_env env;
        auto s = plain_settings(3);
        s.ttl = 100ms;  // drift 1 + 2 ms
        acquire_decision d{s};
        (void)d.start(env.in());
        env.t += 97ms;  // 100 - 97 - 3 = 0 < min_validity (1 ms)
        (void)d.on_grant(0, {outcome_of(answer::grant)}, env.in());
        const acquire_actions a = d.on_grant(1, {outcome_of(answer::grant)}, env.in());
        CHECK(a.send_releases);
        CHECK(a.end == acquire_actions::ending::none);
        CHECK(d.failure_reason() == errc::validity_expired);
        REQUIRE(d.failure_validity());
        CHECK(*d.failure_validity() == 0ms);
        CHECK(d.release_form_of(0) == release_form::by_sha);
        CHECK(d.release_form_of(2) == release_form::by_eval);  // no answer: may still grant
    }
}

TEST_SUITE("acquire decision: fencing rounds") {
    TEST_CASE("the token exceeds every counter read before the verdict, whatever they say") {
        const std::uint64_t values[] = {0, 1, 3, 7};
        for (const std::size_t n : {1U, 3U, 5U}) {
            std::size_t combos = 1;
            for (std::size_t i = 0; i < n; ++i) combos *= 4 * 4;
            for (std::size_t code = 0; code < combos; ++code) {
                fake_env env;
                auto s = plain_settings(n);
                s.fencing = true;
                acquire_decision d{s};
                (void)d.start(env.in());
                std::size_t c = code;
                std::uint64_t highest_heard = 0;
                bool confirming = false;
                for (std::size_t node = 0; node < n && !confirming; ++node) {
                    const answer a = all_answers[c % 4];
                    const std::uint64_t counter = values[(c / 4) % 4];
                    c /= 16;
                    highest_heard = std::max(highest_heard, counter);
                    const acquire_actions act =
                        d.on_grant(node, grant_answer{outcome_of(a), counter, -2, false}, env.in());
                    confirming = act.send_confirms;
                    CHECK(act.end != acquire_actions::ending::granted);  // never before round 2
                }
                if (!confirming) continue;
                INFO("n=" << n << " code=" << code);
                CHECK(d.token() == highest_heard + 1);
                CHECK(d.open_for_confirms());
                CHECK_FALSE(d.open_for_grants());  // a late grant reply is not counted
            }
        }
    }

    TEST_CASE("round 2 decides on its own majority, in every reply order") {
        for (const std::size_t n : {1U, 3U, 5U, 7U}) {
            for_each_sequence(n, [&](const std::vector<answer>& seq, std::size_t code) {
                fake_env env;
                auto s = plain_settings(n);
                s.fencing = true;
                acquire_decision d{s};
                (void)d.start(env.in());
                // Round 1: every node grants; the counters disagree.
                acquire_actions round1;
                for (std::size_t node = 0; node < n && !round1.send_confirms; ++node)
                    round1 = d.on_grant(
                        node, grant_answer{outcome_of(answer::grant), (node * 5) % 4, -2, false},
                        env.in());
                REQUIRE(round1.send_confirms);
                // Round 2 in every order.
                const auto order = rotation(n, code);
                std::size_t decided_after = 0;
                acquire_actions decisive;
                for (std::size_t k = 0; k < n; ++k) {
                    const acquire_actions a = d.on_confirm(order[k], outcome_of(seq[k]), env.in());
                    const bool acted = a.send_releases || a.end != acquire_actions::ending::none;
                    if (decided_after == 0 && acted) {
                        decided_after = k + 1;
                        decisive = a;
                    } else {
                        CHECK_FALSE(acted);
                    }
                }
                INFO("n=" << n << " case=" << code);
                CHECK(decided_after == rule_step(n, seq));
                const std::vector<answer> heard(
                    seq.begin(), seq.begin() + static_cast<std::ptrdiff_t>(decided_after));
                if (rule(n, heard) == verdict::won) {
                    CHECK(decisive.end == acquire_actions::ending::granted);
                } else {
                    // Round 1 granted everywhere: undo it where round 2 did not
                    // hear "no longer ours".
                    std::size_t releases = 0;
                    for (std::size_t k = 0; k < n; ++k) {
                        const release_form f = d.release_form_of(order[k]);
                        CHECK((f == release_form::none) ==
                              (k < decided_after && seq[k] == answer::refuse));
                        if (f != release_form::none) ++releases;
                    }
                    CHECK(decisive.send_releases == (releases > 0));
                    CHECK((decisive.end == acquire_actions::ending::failed) == (releases == 0));
                }
            });
        }
    }
}

TEST_SUITE("acquire decision: retries, wake-ups, cancellation") {
    // Three nodes, all refuse: the attempt fails with nothing to release on them.
    auto refuse_all = [](acquire_decision& d, const fake_env& env) {
        acquire_actions last;
        for (std::size_t node = 0; node < 3 && d.open_for_grants(); ++node)
            last = d.on_grant(node, {outcome_of(answer::refuse)}, env.in());
        return last;
    };

    TEST_CASE("retries after retry.delay + jitter until the attempt budget is spent") {
        fake_env env;
        env.rand = 37;  // jitter 37 % 101 = 37 ms
        auto s = plain_settings(3);
        s.max_attempts = 3;
        acquire_decision d{s};
        REQUIRE(d.start(env.in()).send_grants);
        for (std::uint32_t attempt = 1; attempt <= 3; ++attempt) {
            CHECK(d.attempt() == attempt);
            const acquire_actions a = refuse_all(d, env);
            if (attempt < 3) {
                REQUIRE(a.retry_after);
                CHECK(*a.retry_after == 237ms);
                CHECK(d.current_phase() == acquire_decision::phase::sleeping);
                CHECK(d.on_retry_timer(env.in()).send_grants);
            } else {
                CHECK_FALSE(a.retry_after);
                CHECK(d.failure_reason() == errc::contended);
            }
            CHECK(a.send_releases);  // node 2 had not answered: it may still grant
        }
        // Reported once every attempt's release is answered: no key left behind.
        REQUIRE(d.cleanups_pending() == 3);
        CHECK(d.on_cleanup_answered().end == acquire_actions::ending::none);
        CHECK(d.on_cleanup_answered().end == acquire_actions::ending::none);
        CHECK(d.on_cleanup_answered().end == acquire_actions::ending::failed);
    }

    TEST_CASE("the last attempt starts at the wait deadline, and none after it") {
        fake_env env;
        env.rand = 100;  // 200 + 100 ms asked
        auto s = plain_settings(3);
        s.max_attempts = 0;  // the deadline bounds it
        s.max_wait = 250ms;  // from start(), at env.t
        acquire_decision d{s};
        (void)d.start(env.in());
        acquire_actions a = refuse_all(d, env);
        REQUIRE(a.retry_after);
        CHECK(*a.retry_after == 250ms);  // capped at the deadline
        env.t += 250ms;
        (void)d.on_retry_timer(env.in());
        a = refuse_all(d, env);
        CHECK_FALSE(a.retry_after);  // even retry.delay would pass the deadline
        CHECK(d.current_phase() == acquire_decision::phase::ending);
        CHECK(d.attempt() == 2);
    }

    TEST_CASE("a wait of milliseconds::max() is as long as it takes: its deadline saturates") {
        fake_env env;
        env.t = std::chrono::steady_clock::time_point{std::chrono::hours{24 * 365}};
        env.rand = 100;  // 200 + 100 ms asked
        auto s = plain_settings(3);
        s.max_attempts = 0;
        s.max_wait = std::chrono::milliseconds::max();
        acquire_decision d{s};
        (void)d.start(env.in());
        for (int attempt = 0; attempt < 3; ++attempt) {
            const acquire_actions a = refuse_all(d, env);
            REQUIRE(a.retry_after);
            CHECK(*a.retry_after == 300ms);  // not capped by an overflowed deadline
            env.t += 300ms;
            REQUIRE(d.on_retry_timer(env.in()).send_grants);
        }
    }

    TEST_CASE("a wake-up mid-attempt retries at once, while sleeping it cancels the timer") {
        fake_env env;
        auto s = plain_settings(3);
        s.max_attempts = 0;
        s.waiting = true;
        s.max_wait = 10s;  // from start(), at env.t
        acquire_decision d{s};
        (void)d.start(env.in());
        CHECK_FALSE(d.on_wake(env.in()).send_grants);  // in flight: remembered, not acted on
        acquire_actions a = refuse_all(d, env);
        REQUIRE(a.retry_after);
        CHECK(*a.retry_after == 0ms);
        (void)d.on_retry_timer(env.in());
        a = refuse_all(d, env);
        REQUIRE(a.retry_after);
        CHECK(*a.retry_after > 0ms);  // the wake-up was used up
        const acquire_actions woken = d.on_wake(env.in());
        CHECK(woken.cancel_retry_timer);
        CHECK(woken.send_grants);
        CHECK(d.attempt() == 3);
    }

    TEST_CASE("cancelled mid-attempt: releases what may have been granted, reports cancelled") {
        fake_env env;
        auto s = plain_settings(3);
        s.max_attempts = 5;
        acquire_decision d{s};
        (void)d.start(env.in());
        (void)d.on_grant(0, {outcome_of(answer::grant)}, env.in());
        acquire_actions a = d.on_cancel(errc::cancelled);
        CHECK(a.send_releases);
        CHECK_FALSE(a.retry_after);
        CHECK(d.release_form_of(0) == release_form::by_sha);
        CHECK(d.release_form_of(1) == release_form::by_eval);
        CHECK(d.cleanups_pending() == 3);
        CHECK(d.on_cleanup_answered().end == acquire_actions::ending::none);
        CHECK(d.on_cleanup_answered().end == acquire_actions::ending::none);
        CHECK(d.on_cleanup_answered().end == acquire_actions::ending::failed);
        CHECK(d.failure_reason() == errc::cancelled);
        CHECK(d.on_cancel(errc::client_stopped).end == acquire_actions::ending::none);  // once
        CHECK_FALSE(
            d.on_grant(1, {outcome_of(answer::grant)}, env.in()).send_grants);  // late: ignored
    }

    TEST_CASE("cancelled while sleeping: the timer is cancelled and the failure reported") {
        fake_env env;
        auto s = plain_settings(3);
        s.max_attempts = 5;
        acquire_decision d{s};
        (void)d.start(env.in());
        REQUIRE(refuse_all(d, env).retry_after);
        CHECK(d.on_cleanup_answered().end == acquire_actions::ending::none);  // still sleeping
        const acquire_actions a = d.on_cancel(errc::client_stopped);
        CHECK(a.cancel_retry_timer);
        CHECK(a.end == acquire_actions::ending::failed);
        CHECK(d.failure_reason() == errc::client_stopped);
        CHECK_FALSE(d.on_retry_timer(env.in()).send_grants);
        CHECK_FALSE(d.on_wake(env.in()).send_grants);
    }

    TEST_CASE("a waiter that was queued leaves the queue on every node when it gives up") {
        for (const bool queued : {false, true}) {
            fake_env env;
            auto s = plain_settings(3);
            s.waiting = true;
            s.max_attempts = 1;
            s.max_wait = 1s;  // from start(), at env.t
            acquire_decision d{s};
            (void)d.start(env.in());
            acquire_actions a;
            for (std::size_t node = 0; node < 2; ++node)
                a = d.on_grant(node, {outcome_of(answer::refuse), 0, 500, queued}, env.in());
            // Lost, and node 2 is heard out (loss_grace) before anything is undone.
            REQUIRE(a.loss_grace);
            CHECK_FALSE(a.send_dequeues);
            a = d.on_loss_grace(env.in());  // still silent: released, as it may have granted
            CHECK(a.send_dequeues == queued);
            CHECK(a.send_releases);
            CHECK(d.release_form_of(2) == acquire_decision::release_form::by_eval);
            CHECK(d.cleanups_pending() == (queued ? 4U : 1U));  // + node 2's release
        }
    }
}
