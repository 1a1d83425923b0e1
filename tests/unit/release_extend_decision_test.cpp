// release_decision and extend_decision, exhaustively: every order of answers
// on 1, 3, 5 and 7 nodes, and the extension's deadline at its bounds.
#include "canned_reply.hpp"
#include "sansio/extend_decision.hpp"
#include "sansio/release_decision.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

using namespace std::chrono_literals;
using redlock::errc;
using namespace redlock::detail;

TEST_SUITE("release decision") {
    TEST_CASE(
        "grace starts once, when a majority deleted or none can, the report when all answered") {
        for (const std::size_t n : {1U, 3U, 5U, 7U}) {
            const std::size_t needed = n / 2 + 1;
            redlock_test::for_each_answers(
                n, 2, [&](const std::vector<std::size_t>& seq, std::size_t) {
                    release_decision d{n};
                    std::size_t deleted = 0;
                    std::size_t graces = 0;
                    for (std::size_t k = 0; k < n; ++k) {
                        deleted += seq[k];
                        const std::size_t answered = k + 1;
                        const bool decided_now =
                            deleted >= needed || deleted + (n - answered) < needed;
                        const auto step = d.on_answer(seq[k] == 1);
                        if (answered == n) {
                            CHECK(step == release_decision::step::finish);
                        } else if (decided_now && graces == 0) {
                            CHECK(step == release_decision::step::start_grace);
                        } else {
                            CHECK(step == release_decision::step::wait);
                        }
                        if (step == release_decision::step::start_grace) ++graces;
                    }
                    CHECK(graces <= 1);
                    CHECK(d.deleted() == deleted);
                    CHECK(d.pending() == 0);
                    CHECK(d.needed() == needed);
                });
        }
    }

    TEST_CASE("the grace period is as long again as the decision took, at least 1 ms") {
        CHECK(release_decision::grace(0ms) == 1ms);
        CHECK(release_decision::grace(1ms) == 1ms);
        CHECK(release_decision::grace(37ms) == 37ms);
    }
}

TEST_SUITE("extend decision") {
    TEST_CASE("every answer order: the verdict, its reason and the nodes to repair") {
        const extend_answer kinds[] = {extend_answer::extended, extend_answer::other_value,
                                       extend_answer::missing, extend_answer::failed};
        for (const std::size_t n : {1U, 3U, 5U, 7U}) {
            const std::size_t needed = n / 2 + 1;
            redlock_test::for_each_answers(
                n, 4, [&](const std::vector<std::size_t>& seq, std::size_t) {
                    extend_decision d{n};
                    std::size_t yes = 0;
                    std::size_t refused = 0;
                    bool decided = false;
                    for (std::size_t k = 0; k < n; ++k) {
                        const extend_answer a = kinds[seq[k]];
                        const auto v = d.on_answer(k, a);
                        if (decided) {
                            // Closed: a late answer is not counted, and a late
                            // "missing" is repaired only after a success.
                            CHECK(v == quorum_tally::verdict::pending);
                            CHECK_FALSE(d.missing(k));
                            continue;
                        }
                        yes += a == extend_answer::extended ? 1 : 0;
                        refused += a == extend_answer::other_value || a == extend_answer::missing;
                        CHECK(d.missing(k) == (a == extend_answer::missing));
                        const std::size_t answered = k + 1;
                        if (yes >= needed) {
                            CHECK(v == quorum_tally::verdict::won);
                        } else if (yes + (n - answered) < needed) {
                            CHECK(v == quorum_tally::verdict::lost);
                            // "Not ours" from a majority is definite; anything less is not.
                            CHECK(d.failure() == (refused > n - needed ? errc::not_held
                                                                       : errc::quorum_unreachable));
                        } else {
                            CHECK(v == quorum_tally::verdict::pending);
                        }
                        decided = v != quorum_tally::verdict::pending;
                        CHECK(d.open() == !decided);
                    }
                    CHECK_FALSE(d.repairs_late(extend_answer::missing));
                    d.mark_extended();
                    CHECK(d.repairs_late(extend_answer::missing));
                    CHECK_FALSE(d.repairs_late(extend_answer::other_value));
                });
        }
    }

    TEST_CASE("the new deadline: never shorter, never after the validity ended") {
        const auto t0 = std::chrono::steady_clock::time_point{std::chrono::seconds{100}};
        extend_decision::deadline_inputs in{.adopted = false,
                                            .old_deadline = t0 + 5s,
                                            .started = t0,
                                            .now = t0 + 10ms,
                                            .ttl = 10'000ms,
                                            .confirmed_left = std::nullopt,
                                            .drift_factor = 0.01,
                                            .drift_floor = 2ms};
        // 10 s - 10 ms elapsed - 102 ms drift, from now.
        auto out = extend_decision::new_deadline(in);
        REQUIRE(out.deadline);
        CHECK(*out.deadline == in.now + 9'888ms);
        // A shorter ttl does not shorten the lock (the script never lowers a TTL).
        in.ttl = 1'000ms;
        out = extend_decision::new_deadline(in);
        REQUIRE(out.deadline);
        CHECK(*out.deadline == in.old_deadline);
        // Confirmed only after the old validity had ended: not held.
        in.now = in.old_deadline;
        out = extend_decision::new_deadline(in);
        CHECK_FALSE(out.deadline);
        CHECK(out.why != nullptr);
        // Adopted: the validity is unknown here; the new one counts from scratch.
        in.adopted = true;
        in.now = t0 + 10ms;
        out = extend_decision::new_deadline(in);
        REQUIRE(out.deadline);
        CHECK(*out.deadline == in.now + (1'000ms - 10ms - 12ms));
        // Adopted, with nothing left after elapsed time and drift: not held.
        in.now = t0 + 988ms;
        CHECK_FALSE(extend_decision::new_deadline(in).deadline);
    }

    TEST_CASE("the new deadline counts from the TTL the nodes report, not the ttl asked for") {
        const auto t0 = std::chrono::steady_clock::time_point{std::chrono::seconds{100}};
        // An adopted lock with 58 s left on the nodes, extended with 1 s: the
        // scripts keep the 58 s, and so must the validity reported.
        extend_decision::deadline_inputs in{.adopted = true,
                                            .old_deadline = {},
                                            .started = t0,
                                            .now = t0 + 10ms,
                                            .ttl = 1'000ms,
                                            .confirmed_left = 58'000ms,
                                            .drift_factor = 0.01,
                                            .drift_floor = 2ms};
        auto out = extend_decision::new_deadline(in);
        REQUIRE(out.deadline);
        // 58 s - 10 ms elapsed - 582 ms drift.
        CHECK(*out.deadline == in.now + (58'000ms - 10ms - 582ms));
        // A held lock whose own deadline is later still keeps it.
        in.adopted = false;
        in.old_deadline = t0 + 59s;
        out = extend_decision::new_deadline(in);
        REQUIRE(out.deadline);
        CHECK(*out.deadline == in.old_deadline);
        // Without a report from the nodes: the ttl asked for, as before.
        in.adopted = true;
        in.confirmed_left.reset();
        out = extend_decision::new_deadline(in);
        REQUIRE(out.deadline);
        CHECK(*out.deadline == in.now + (1'000ms - 10ms - 12ms));
    }
}
