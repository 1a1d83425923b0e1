// extend_decision's outcomes at their edges, as extend_op drives it: a
// majority that confirms too late, an adopted lock, a late repair while the
// lock is (or is no longer) ours, NOSCRIPT to EVAL, how a failure names every
// node, and what each reply says. No clock.
#include "canned_reply.hpp"
#include "extend_flow_support.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using namespace redlock::detail;
using namespace redlock_test::extend_flow;
using redlock::errc;
using redlock::node_status;
using redlock_test::canned_reply;

TEST_SUITE("extend decision: deadlines and repairs") {
    TEST_CASE("a majority that confirms only after the validity ended is not an extension") {
        extend_decision d{3, settings};
        const extend_lock_view lock = held_lock(t0 + 5ms);
        REQUIRE(d.start(lock, t0).send_extends);
        const canned_reply yes = canned_reply::integer(10'000);
        CHECK(d.on_reply(0, script_form::evalsha, yes.event(), lock, t0 + 5ms).end == ending::none);
        const extend_actions a = d.on_reply(1, script_form::evalsha, yes.event(), lock, t0 + 5ms);
        REQUIRE(a.end == ending::failed);
        CHECK(a.code == errc::not_held);
        CHECK(a.message ==
              "cannot extend 'orders:42': the majority confirmed only after the "
              "validity had ended; it expired at its previous deadline");
        CHECK(a.took == 5ms);
        // A late "missing" is not repaired: the extension failed.
        const canned_reply gone = canned_reply::integer(-1);
        CHECK_FALSE(d.on_reply(2, script_form::evalsha, gone.event(), lock, t0 + 6ms).repair_late);
    }

    TEST_CASE("a failed extend says what is left: the old deadline, or that the lock expired") {
        const extend_lock_view live = held_lock(t0 + 5ms);
        CHECK(extend_decision::after_failure(errc::not_held, live, t0 + 4ms) ==
              "; it stays valid until its previous deadline");
        CHECK(extend_decision::after_failure(errc::quorum_unreachable, live, t0 + 4ms) ==
              "; it stays valid until its previous deadline");
        // Stale: the deadline passed while the extend was on its way.
        CHECK(extend_decision::after_failure(errc::not_held, live, t0 + 5ms) ==
              "; it expired at its previous deadline");
        CHECK(extend_decision::after_failure(errc::quorum_unreachable, live, t0 + 9ms) ==
              "; it expired at its previous deadline");
        // Adopted: no deadline is known here.
        extend_lock_view adopted = held_lock({});
        adopted.adopted = true;
        CHECK(extend_decision::after_failure(errc::not_held, adopted, t0 + 9ms) ==
              "; no majority holds this value: it expired or was released");
        CHECK(extend_decision::after_failure(errc::quorum_unreachable, adopted, t0 + 9ms) ==
              "; the nodes that did not confirm keep the TTL they had");
    }

    TEST_CASE("an adopted lock counts its validity from scratch, and fails with none left") {
        for (const auto elapsed : {7ms, 988ms}) {
            extend_decision d{1, {.ttl = 1'000ms}};
            extend_lock_view lock = held_lock({});
            lock.adopted = true;
            REQUIRE(d.start(lock, t0).send_extends);
            const canned_reply yes = canned_reply::integer(1'000);
            const extend_actions a =
                d.on_reply(0, script_form::evalsha, yes.event(), lock, t0 + elapsed);
            INFO("elapsed " << elapsed.count() << " ms");
            if (elapsed == 7ms) {
                REQUIRE(a.end == ending::extended);
                CHECK(a.deadline == t0 + 7ms + (1'000ms - 7ms - 12ms));
            } else {
                REQUIRE(a.end == ending::failed);
                CHECK(a.code == errc::not_held);
            }
        }
    }

    TEST_CASE("a late missing node is repaired only while the lock is still ours") {
        struct one {
            const char* what;
            bool released;
            bool lost;
            time_point now;
            bool repaired;
        };
        const one cases[] = {
            {"valid", false, false, t0 + 4s, true},
            {"released", true, false, t0 + 4s, false},
            {"lost", false, true, t0 + 4s, false},
            {"validity ended", false, false, t0 + 5s, false},
        };
        for (const auto& c : cases) {
            INFO(c.what);
            extend_decision d{3, settings};
            extend_lock_view lock = held_lock(t0 + 5s);
            REQUIRE(d.start(lock, t0).send_extends);
            const canned_reply yes = canned_reply::integer(10'000);
            (void)d.on_reply(0, script_form::evalsha, yes.event(), lock, t0 + 1ms);
            REQUIRE(d.on_reply(1, script_form::evalsha, yes.event(), lock, t0 + 1ms).end ==
                    ending::extended);
            lock.released = c.released;
            lock.lost = c.lost;
            const canned_reply gone = canned_reply::integer(-1);
            const extend_actions a = d.on_reply(2, script_form::eval, gone.event(), lock, c.now);
            CHECK(a.repair_late.has_value() == c.repaired);
        }
    }

    TEST_CASE("NOSCRIPT to EVAL is an answer (an error), not resent again") {
        extend_decision d{1, settings};
        const extend_lock_view lock = held_lock(t0 + 5s);
        REQUIRE(d.start(lock, t0).send_extends);
        const canned_reply noscript = canned_reply::noscript();
        const extend_actions a = d.on_reply(0, script_form::eval, noscript.event(), lock, t0);
        CHECK_FALSE(a.resend_as_eval);
        REQUIRE(a.end == ending::failed);
        CHECK(a.code == errc::quorum_unreachable);
        const redlock::error e = d.failure_error(a, name_of);
        REQUIRE(e.nodes.size() == 1);
        CHECK(e.nodes[0].status == node_status::error);
        CHECK(e.nodes[0].detail.starts_with("NOSCRIPT"));
    }

    TEST_CASE("a failure names every node: the counts, each answer, and those not heard") {
        extend_decision d{5, settings};
        const extend_lock_view lock = held_lock(t0 + 5s);
        REQUIRE(d.start(lock, t0).send_extends);
        const canned_reply yes = canned_reply::integer(9'000);
        const canned_reply other = canned_reply::integer(0);
        const canned_reply gone = canned_reply::integer(-1);
        const canned_reply late = canned_reply::timeout();
        CHECK(d.on_reply(3, script_form::evalsha, yes.event(), lock, t0 + 3ms).end == ending::none);
        CHECK(d.on_reply(0, script_form::evalsha, other.event(), lock, t0 + 3ms).end ==
              ending::none);
        CHECK(d.on_reply(4, script_form::evalsha, gone.event(), lock, t0 + 3ms).end ==
              ending::none);
        const extend_actions a = d.on_reply(1, script_form::eval, late.event(), lock, t0 + 4ms);
        REQUIRE(a.end == ending::failed);
        // Two said "not ours": no majority of them, so not definite.
        CHECK(a.code == errc::quorum_unreachable);
        const redlock::error e = d.failure_error(a, name_of);
        CHECK(e.code == make_error_code(errc::quorum_unreachable));
        CHECK(e.message ==
              "cannot extend 'orders:42': fewer than a majority of nodes confirmed in time; it "
              "stays valid until its previous deadline (1 of 5 confirmed, 3 needed; n0 refused: "
              "holds another value; n1 timeout: no reply within 50 ms; n2 cancelled: no answer; "
              "n4 refused: the key is missing (restarted or evicted))");
        REQUIRE(e.nodes.size() == 5);
        const node_status expected[] = {node_status::refused, node_status::timeout,
                                        node_status::cancelled, node_status::ok,
                                        node_status::refused};
        for (std::size_t i = 0; i < 5; ++i) {
            CHECK(e.nodes[i].node == name_of(i));
            CHECK(e.nodes[i].status == expected[i]);
        }
        // A straggler after the verdict changes nothing of it.
        (void)d.on_reply(2, script_form::evalsha, yes.event(), lock, t0 + 5ms);
        CHECK(d.failure_error(a, name_of).message == e.message);
    }

    TEST_CASE("what a reply says to the extend script") {
        CHECK(extend_decision::answer_of(canned_reply::integer(1).event()) ==
              extend_answer::extended);
        CHECK(extend_decision::answer_of(canned_reply::integer(58'000).event()) ==
              extend_answer::extended);
        CHECK(extend_decision::answer_of(canned_reply::integer(0).event()) ==
              extend_answer::other_value);
        CHECK(extend_decision::answer_of(canned_reply::integer(-1).event()) ==
              extend_answer::missing);
        CHECK(extend_decision::answer_of(canned_reply::integer(-2).event()) ==
              extend_answer::failed);
        CHECK(extend_decision::answer_of(canned_reply::nil().event()) == extend_answer::failed);
        CHECK(extend_decision::answer_of(canned_reply::error("ERR x").event()) ==
              extend_answer::failed);
        CHECK(extend_decision::answer_of(canned_reply::timeout().event()) == extend_answer::failed);
    }
}
