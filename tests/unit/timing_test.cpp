#include "sansio/timing.hpp"

#include "sansio/quorum_tally.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using redlock::detail::clock_drift;
using redlock::detail::quorum;
using redlock::detail::validity;

// Compile-time facts sit next to the runtime cases that explain them.
static_assert(quorum(1) == 1);
static_assert(quorum(2) == 2);
static_assert(quorum(3) == 2);
static_assert(quorum(4) == 3);
static_assert(quorum(5) == 3);
static_assert(quorum(7) == 4);
static_assert(clock_drift(10'000ms, 0.01, 2ms) == 102ms);

TEST_SUITE("validity") {
    TEST_CASE("subtracts elapsed time and clock drift from the ttl") {
        CHECK(validity(10'000ms, 40ms, 0.01, 2ms) == 9'858ms);
    }

    TEST_CASE("rounds elapsed time up, never down") {
        CHECK(validity(10'000ms, 1'000'001ns, 0.01, 2ms) == 9'896ms);
        CHECK(validity(10'000ms, 1ns, 0.01, 2ms) == 9'897ms);
    }

    TEST_CASE("rounds the drift up, never down") {
        CHECK(clock_drift(150ms, 0.01, 0ms) == 2ms);  // 1.5 ms becomes 2 ms
        CHECK(clock_drift(100ms, 0.01, 0ms) == 1ms);  // exact values stay
        CHECK(clock_drift(1ms, 0.0, 2ms) == 2ms);
    }

    TEST_CASE("reaches zero exactly when elapsed plus drift equals the ttl") {
        // ttl 1000, drift 10 + 2 = 12: elapsed 988 ms leaves nothing.
        CHECK(validity(1'000ms, 988ms, 0.01, 2ms) == 0ms);
        CHECK(validity(1'000ms, 987ms, 0.01, 2ms) == 1ms);
        CHECK(validity(1'000ms, 987'000'001ns, 0.01, 2ms) == 0ms);
    }

    TEST_CASE("goes negative when acquiring took longer than the ttl") {
        CHECK(validity(100ms, 150ms, 0.01, 2ms) < 0ms);
    }

    TEST_CASE("zero elapsed time leaves ttl minus drift") {
        CHECK(validity(2'000ms, 0ns, 0.01, 2ms) == 1'978ms);
    }
}

TEST_SUITE("quorum_tally") {
    using redlock::detail::quorum_tally;
    using verdict = quorum_tally::verdict;

    TEST_CASE("wins on the reply that completes a majority, without waiting for the rest") {
        quorum_tally tally{5};
        CHECK(tally.yes() == verdict::pending);
        CHECK(tally.failed() == verdict::pending);
        CHECK(tally.yes() == verdict::pending);
        CHECK(tally.yes() == verdict::won);
        CHECK(tally.pending() == 1);
    }

    TEST_CASE("loses on the reply that makes a majority impossible") {
        quorum_tally tally{5};
        CHECK(tally.refused() == verdict::pending);
        CHECK(tally.failed() == verdict::pending);
        CHECK(tally.refused() == verdict::lost);
        CHECK(tally.pending() == 2);
    }

    TEST_CASE("a single node decides alone") {
        quorum_tally won{1};
        CHECK(won.yes() == verdict::won);
        quorum_tally lost{1};
        CHECK(lost.failed() == verdict::lost);
    }

    TEST_CASE("an even count needs more than half") {
        quorum_tally tally{4};
        CHECK(tally.yes() == verdict::pending);
        CHECK(tally.yes() == verdict::pending);
        CHECK(tally.refused() == verdict::pending);
        CHECK(tally.refused() == verdict::lost);  // 2 of 4 is not a majority
    }

    TEST_CASE("every order of three yes and two no on five nodes ends won") {
        // Enumerate the 10 placements of the two refusals among five replies.
        for (int a = 0; a < 5; ++a) {
            for (int b = a + 1; b < 5; ++b) {
                quorum_tally tally{5};
                verdict last = verdict::pending;
                for (int i = 0; i < 5 && last == verdict::pending; ++i) {
                    last = (i == a || i == b) ? tally.refused() : tally.yes();
                }
                CHECK(last == verdict::won);
            }
        }
    }

    TEST_CASE("counts what it was told") {
        quorum_tally tally{3};
        tally.yes();
        tally.refused();
        tally.failed();
        CHECK(tally.yes_count() == 1);
        CHECK(tally.refused_count() == 1);
        CHECK(tally.failed_count() == 1);
        CHECK(tally.answered() == 2);
        CHECK(tally.needed() == 2);
    }

    TEST_CASE("a node's reported status counts as yes, no or failure") {
        using redlock::node_status;
        for (const node_status s :
             {node_status::ok, node_status::refused, node_status::error, node_status::timeout,
              node_status::unreachable, node_status::cancelled, node_status::pending}) {
            quorum_tally tally{3};
            (void)tally.outcome(s);
            CHECK(tally.yes_count() == (s == node_status::ok ? 1U : 0U));
            CHECK(tally.refused_count() == (s == node_status::refused ? 1U : 0U));
            CHECK(tally.failed_count() ==
                  (s != node_status::ok && s != node_status::refused ? 1U : 0U));
        }
    }
}
