// acquire_decision's settling hold (lib/sansio/acquire_settling.cpp): a majority's
// grant waits for nodes still making their first connection, at most settle_limit
// (and half the TTL) from the attempt's start. Every answer sequence on five nodes,
// for every set of settling nodes; no socket, no clock.
#include "acquire_decision_support.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace redlock_test;
using redlock::detail::acquire_input;
using redlock::detail::settling_nodes;

namespace {

struct fake_settling final : settling_nodes {
    std::vector<bool> nodes;
    [[nodiscard]] auto settling(std::size_t node) const -> bool override {
        return node < nodes.size() && nodes[node];
    }
};

auto settle_settings(std::size_t n) -> acquire_settings {
    auto s = plain_settings(n);
    s.settle_limit = 500ms;
    return s;
}

auto with(const fake_env& env, const settling_nodes* settling) -> acquire_input {
    acquire_input in = env.in();
    in.settling = settling;
    return in;
}

auto ended(const acquire_actions& a) -> bool {
    return a.end != acquire_actions::ending::none || a.send_confirms || a.send_releases;
}

// The rule: lost as soon as a majority is impossible; won once a majority granted
// and no settling node is still unheard.
auto rule_step(std::size_t n, const std::vector<answer>& seq, const std::vector<bool>& settling)
    -> std::size_t {
    std::vector<answer> prefix;
    for (std::size_t k = 0; k < seq.size(); ++k) {
        prefix.push_back(seq[k]);
        const verdict v = rule(n, prefix);
        if (v == verdict::lost) return k + 1;
        if (v != verdict::won) continue;
        bool unheard = false;
        for (std::size_t i = k + 1; i < n; ++i) unheard = unheard || settling[i];
        if (!unheard) return k + 1;
    }
    return 0;
}

}  // namespace

TEST_SUITE("acquire decision: the settling hold") {
    TEST_CASE("every answer sequence, every set of settling nodes: a win waits for them all") {
        constexpr std::size_t n = 5;
        std::size_t held = 0;
        for (unsigned mask = 0; mask < (1U << n); ++mask) {
            fake_settling settling;
            for (std::size_t i = 0; i < n; ++i) settling.nodes.push_back(((mask >> i) & 1U) != 0);
            for_each_sequence(n, [&](const std::vector<answer>& seq, std::size_t code) {
                INFO("settling mask " << mask << ", case " << code);
                fake_env env;
                acquire_decision d{settle_settings(n)};
                REQUIRE(d.start(with(env, &settling)).send_grants);
                std::size_t decided = 0;
                bool grace_asked = false;
                for (std::size_t k = 0; k < n; ++k) {
                    env.t += 10ms;
                    const acquire_actions a = d.on_grant(
                        k, grant_answer{outcome_of(seq[k]), 0, -2, false}, with(env, &settling));
                    if (a.settle_grace) {
                        CHECK_FALSE(grace_asked);  // one timer per hold
                        CHECK(*a.settle_grace == 500ms - std::chrono::milliseconds{10 * (k + 1)});
                        grace_asked = true;
                    }
                    if (decided == 0 && ended(a)) {
                        decided = k + 1;
                        // A hold that ends before its timer cancels the timer.
                        CHECK(a.cancel_retry_timer == grace_asked);
                        if (a.end == acquire_actions::ending::granted) {
                            // Counted from the attempt's start: the wait is not free.
                            CHECK(a.validity <= 10'000ms - std::chrono::milliseconds{10 * (k + 1)});
                        }
                    } else if (decided != 0) {
                        CHECK_FALSE(ended(a));  // the replies after the verdict change nothing
                    }
                }
                CHECK(decided == rule_step(n, seq, settling.nodes));
                if (grace_asked) ++held;
            });
        }
        CHECK(held > 0);
    }

    TEST_CASE("without a settling probe, or with none settling, a majority decides at once") {
        for (const bool probe : {false, true}) {
            fake_settling none;
            none.nodes.assign(5, false);
            fake_env env;
            acquire_decision d{settle_settings(5)};
            (void)d.start(with(env, probe ? &none : nullptr));
            const grant_answer yes{outcome_of(answer::grant), 0, -2, false};
            CHECK(d.on_grant(0, yes, with(env, probe ? &none : nullptr)).end ==
                  acquire_actions::ending::none);
            (void)d.on_grant(1, yes, with(env, probe ? &none : nullptr));
            CHECK(d.on_grant(2, yes, with(env, probe ? &none : nullptr)).end ==
                  acquire_actions::ending::granted);
        }
    }

    TEST_CASE("the grace timer decides without the nodes still settling") {
        fake_settling settling;
        settling.nodes = {false, false, false, true, true};
        fake_env env;
        acquire_decision d{settle_settings(5)};
        (void)d.start(with(env, &settling));
        const grant_answer yes{outcome_of(answer::grant), 0, -2, false};
        (void)d.on_grant(0, yes, with(env, &settling));
        (void)d.on_grant(1, yes, with(env, &settling));
        env.t += 20ms;
        const auto hold = d.on_grant(2, yes, with(env, &settling));
        CHECK(hold.end == acquire_actions::ending::none);
        REQUIRE(hold.settle_grace);
        CHECK(*hold.settle_grace == 480ms);
        env.t += 480ms;
        const auto after = d.on_settle_grace(with(env, &settling));
        CHECK(after.end == acquire_actions::ending::granted);
        CHECK(after.validity < 10'000ms - 500ms);
        // A settling node's answer after that is a straggler: nothing more happens.
        CHECK(d.on_grant(3, yes, with(env, &settling)).end == acquire_actions::ending::none);
    }

    TEST_CASE("the hold is at most half the TTL, and none once the limit has passed") {
        fake_settling settling;
        settling.nodes = {false, false, false, false, true};
        const grant_answer yes{outcome_of(answer::grant), 0, -2, false};
        {
            auto s = settle_settings(5);
            s.ttl = 400ms;
            fake_env env;
            acquire_decision d{s};
            (void)d.start(with(env, &settling));
            for (std::size_t i = 0; i < 2; ++i) (void)d.on_grant(i, yes, with(env, &settling));
            const auto a = d.on_grant(2, yes, with(env, &settling));
            REQUIRE(a.settle_grace);
            CHECK(*a.settle_grace == 200ms);
        }
        {
            fake_env env;
            acquire_decision d{settle_settings(5)};
            (void)d.start(with(env, &settling));
            env.t += 600ms;  // the majority came after settle_limit
            for (std::size_t i = 0; i < 2; ++i) (void)d.on_grant(i, yes, with(env, &settling));
            CHECK(d.on_grant(2, yes, with(env, &settling)).end == acquire_actions::ending::granted);
        }
    }

    TEST_CASE("fenced: the hold comes before round 2, and a cancel cancels the grace timer") {
        fake_settling settling;
        settling.nodes = {false, false, false, true, false};
        const grant_answer yes{outcome_of(answer::grant), 3, -2, false};
        auto s = settle_settings(5);
        s.fencing = true;
        {
            fake_env env;
            acquire_decision d{s};
            (void)d.start(with(env, &settling));
            for (std::size_t i = 0; i < 3; ++i)
                CHECK_FALSE(d.on_grant(i, yes, with(env, &settling)).send_confirms);
            const auto a = d.on_grant(3, yes, with(env, &settling));
            CHECK(a.send_confirms);
            CHECK(a.cancel_retry_timer);
            CHECK(d.token() == 4);
        }
        {
            fake_env env;
            acquire_decision d{s};
            (void)d.start(with(env, &settling));
            for (std::size_t i = 0; i < 3; ++i) (void)d.on_grant(i, yes, with(env, &settling));
            const auto a = d.on_cancel(redlock::errc::cancelled);
            CHECK(a.cancel_retry_timer);
            CHECK(a.send_releases);
        }
    }
}
