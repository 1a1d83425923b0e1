// decide_session_round, a session's renewal decided with no I/O: every
// combination of what each node says about a lock (failed, extended, another
// value, missing) on 1, 3, 5 and 7 nodes, checked against the rules; several
// locks in one round, each decided alone; the deadline never later than the
// round's start + TTL - drift; and the node replies read per lock
// (session_reply_of), a lock of several keys folded; the parts of a round sent
// to a node one at a time (session_next_part). Times are values.
#include "sansio/session_renewal.hpp"

#include "canned_reply.hpp"
#include "sansio/delay_policy.hpp"
#include "sansio/timing.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::detail;
using redlock::node_status;
using redlock_test::canned_reply;
using time_point = std::chrono::steady_clock::time_point;

namespace {

const time_point round_start{std::chrono::seconds{2000}};

auto settings_for(std::size_t nodes) -> session_settings {
    return {.nodes = nodes,
            .ttl = 3000ms,
            .renew_fraction = 1.0 / 3.0,
            .request_timeout = 50ms,
            .drift_factor = 0.01,
            .drift_floor = 2ms};
}

/// What a node says about the one lock: 0 failed, 1 extended, 2 other, 3 missing.
auto reply_of(int what) -> session_node_reply {
    session_node_reply r;
    if (what == 0) {
        r.status = node_status::timeout;
        r.cause = "no reply";
        return r;
    }
    r.answers = std::vector<session_answer>{what == 1   ? session_answer::extended
                                            : what == 2 ? session_answer::other_value
                                                        : session_answer::missing};
    return r;
}

}  // namespace

TEST_SUITE("session renewal") {
    TEST_CASE("every answer combination on 1, 3, 5 and 7 nodes follows the rules") {
        std::size_t cases = 0;
        for (std::size_t n : {1U, 3U, 5U, 7U}) {
            const session_settings s = settings_for(n);
            const std::size_t q = quorum(n);
            std::size_t combos = 1;
            for (std::size_t i = 0; i < n; ++i) combos *= 4;
            for (std::size_t code = 0; code < combos; ++code) {
                for (const bool still_valid : {true, false}) {
                    std::vector<session_node_reply> replies;
                    std::size_t yes = 0, no = 0, answered = 0;
                    std::vector<std::size_t> missing_nodes;
                    std::size_t c = code;
                    for (std::size_t i = 0; i < n; ++i, c /= 4) {
                        const int what = static_cast<int>(c % 4);
                        replies.push_back(reply_of(what));
                        answered += what != 0;
                        yes += what == 1;
                        no += what >= 2;
                        if (what == 3) missing_nodes.push_back(i);
                    }
                    const time_point now = round_start + 40ms;
                    const std::vector<time_point> valid{still_valid ? now + 1000ms : now - 1ms};
                    const auto out = decide_session_round(s, replies, valid, round_start, now);
                    ++cases;
                    INFO("nodes " << n << " code " << code << " valid " << still_valid);
                    REQUIRE(out.nodes_answered == answered);
                    const bool renewed = yes >= q && still_valid;
                    REQUIRE((out.renewed.size() == 1) == renewed);
                    REQUIRE((out.refused.size() == 1) == (!renewed && no > n - q));
                    // Safety: never renewed past the round's start + TTL - drift.
                    REQUIRE(out.deadline <= round_start + s.ttl -
                                                clock_drift(s.ttl, s.drift_factor, s.drift_floor));
                    if (renewed) {
                        REQUIRE(out.repairs.size() == missing_nodes.size());
                        for (std::size_t k = 0; k < missing_nodes.size(); ++k)
                            REQUIRE(out.repairs[k].second == missing_nodes[k]);
                    } else {
                        REQUIRE(out.repairs.empty());
                    }
                    const bool undecided = !renewed && !(no > n - q);
                    REQUIRE(out.next_in ==
                            (undecided ? renew_retry_gap(s.request_timeout) : 1000ms - 40ms));
                }
            }
        }
        CHECK(cases == 2 * (4 + 64 + 1024 + 16384));
    }

    TEST_CASE("locks of one round are decided each on its own") {
        const session_settings s = settings_for(3);
        const auto ok = session_answer::extended;
        const auto other = session_answer::other_value;
        const auto gone = session_answer::missing;
        std::vector<session_node_reply> replies(3);
        replies[0].answers = {{ok, other, ok, gone}};
        replies[1].answers = {{ok, other, gone, gone}};
        replies[2].status = node_status::unreachable;  // failed as a whole
        const time_point now = round_start + 10ms;
        const std::vector<time_point> valid(4, now + 2s);
        const auto out = decide_session_round(s, replies, valid, round_start, now);
        CHECK(out.renewed == std::vector<std::size_t>{0});     // 2 of 3 extended
        CHECK(out.refused == std::vector<std::size_t>{1, 3});  // 2 of 3 said no: beyond 1
        // Lock 2: one yes, one missing, one failed: undecided, so the round is retried soon.
        CHECK(out.next_in == renew_retry_gap(s.request_timeout));
        CHECK(out.repairs.empty());
        CHECK(session_lock_reports(replies, 1) ==
              std::vector<node_status>{node_status::refused, node_status::refused,
                                       node_status::unreachable});
    }

    TEST_CASE("the session is lost when a lock's validity has ended") {
        const time_point now = round_start;
        CHECK_FALSE(session_expired(std::vector<time_point>{now + 1ms, now + 5ms}, now));
        CHECK(session_expired(std::vector<time_point>{now + 5ms, now}, now));
        CHECK_FALSE(session_expired(std::vector<time_point>{}, now));
        CHECK(session_next_deadline(std::vector<time_point>{now + 5ms, now + 1ms}) == now + 1ms);
        CHECK_FALSE(session_next_deadline(std::vector<time_point>{}).has_value());
    }

    TEST_CASE("a node's reply is read per lock, a lock of several keys folded") {
        const canned_reply one = canned_reply::integer(1);
        const canned_reply zero = canned_reply::integer(0);
        const canned_reply minus = canned_reply::integer(-1);
        const redlock::detail::reply* elements[] = {&one.event().answer[0], &zero.event().answer[0],
                                                    &minus.event().answer[0],
                                                    &one.event().answer[0]};
        redlock::detail::reply array{reply_kind::array, 0, {}, elements};
        const reply_event event{request_status::reply, &array, {}};
        // Lock 0: keys 1, 0 (another value wins); lock 1: -1 (missing); lock 2: 1.
        const std::vector<std::size_t> keys{2, 1, 1};
        const auto read = session_reply_of(event, keys);
        REQUIRE(read.answers);
        CHECK(*read.answers == std::vector<session_answer>{session_answer::other_value,
                                                           session_answer::missing,
                                                           session_answer::extended});
        // Too few elements, an error reply, a transport failure: the node failed.
        CHECK_FALSE(session_reply_of(event, std::vector<std::size_t>{2, 1}).answers);
        const auto oom = canned_reply::error("OOM command not allowed");
        const auto failed = session_reply_of(oom.event(), keys);
        CHECK_FALSE(failed.answers);
        CHECK(failed.status == node_status::error);
        CHECK(failed.cause.find("OOM") != std::string::npos);
        const auto late = session_reply_of(canned_reply::timeout().event(), keys);
        CHECK(late.status == node_status::timeout);
    }

    TEST_CASE("a round's parts are merged per node, a failed part costing only its locks") {
        session_node_reply node;
        node.answers.emplace(5, session_answer::failed);
        session_node_reply first;
        first.answers = {{session_answer::extended, session_answer::missing}};
        session_node_reply second;  // the call for locks 2..4 timed out
        second.status = node_status::timeout;
        second.cause = "no reply within 50 ms";
        merge_session_part(node, 0, 2, first);
        merge_session_part(node, 2, 3, second);
        finish_session_reply(node);
        REQUIRE(node.answers);
        CHECK(*node.answers ==
              std::vector<session_answer>{session_answer::extended, session_answer::missing,
                                          session_answer::failed, session_answer::failed,
                                          session_answer::failed});
        CHECK(node.status == node_status::timeout);
        CHECK(session_lock_reports(std::vector<session_node_reply>{node}, 3) ==
              std::vector<node_status>{node_status::timeout});
        // Every part failed: the node failed as a whole.
        session_node_reply none;
        none.answers.emplace(3, session_answer::failed);
        merge_session_part(none, 0, 3, second);
        finish_session_reply(none);
        CHECK_FALSE(none.answers);
        CHECK(none.status == node_status::timeout);
        // A failed answer counts neither way: 2 yes of 3 renews; 1 yes, 1 failed, 1 no waits.
        const session_settings s = settings_for(3);
        std::vector<session_node_reply> replies(3);
        replies[0].answers = {{session_answer::extended, session_answer::extended}};
        replies[1].answers = {{session_answer::extended, session_answer::failed}};
        replies[2].answers = {{session_answer::failed, session_answer::other_value}};
        const time_point now = round_start + 5ms;
        const std::vector<time_point> valid(2, now + 2s);
        const auto out = decide_session_round(s, replies, valid, round_start, now);
        CHECK(out.renewed == std::vector<std::size_t>{0});
        CHECK(out.refused.empty());
        CHECK(out.next_in == renew_retry_gap(s.request_timeout));
    }

    TEST_CASE("a node gets a round's parts one at a time, and none after it failed as a whole") {
        // Every sequence of what a node answers to each part, for rounds of 1 to 4 parts:
        // the parts go out in order, one after the last is answered; a node that answered
        // (even with an error) gets the next; one that timed out, dropped or was cancelled
        // gets no more, so a dead node costs the round one request_timeout, not one per part.
        const std::vector<node_status> answers{node_status::ok, node_status::error,
                                               node_status::timeout, node_status::unreachable,
                                               node_status::cancelled};
        const auto whole = [](node_status s) {
            return s == node_status::timeout || s == node_status::unreachable ||
                   s == node_status::cancelled;
        };
        std::size_t sequences = 0;
        for (std::size_t parts = 1; parts <= 4; ++parts) {
            std::size_t combos = 1;
            for (std::size_t i = 0; i < parts; ++i) combos *= answers.size();
            for (std::size_t combo = 0; combo < combos; ++combo) {
                std::vector<node_status> said(parts);
                for (std::size_t i = 0, c = combo; i < parts; ++i, c /= answers.size())
                    said[i] = answers[c % answers.size()];
                std::vector<std::size_t> sent{0};  // the round's start sends part 0
                for (std::optional<std::size_t> next = 0; next;) {
                    next = session_next_part(said[*next], *next, parts);
                    if (next) sent.push_back(*next);
                }
                // What the rule says: every part up to the first whole failure, in order.
                std::size_t expected = parts;
                for (std::size_t i = 0; i < parts; ++i) {
                    if (whole(said[i])) {
                        expected = i + 1;
                        break;
                    }
                }
                REQUIRE(sent.size() == expected);
                for (std::size_t i = 0; i < sent.size(); ++i) CHECK(sent[i] == i);
                ++sequences;
            }
        }
        CHECK(sequences == 5 + 25 + 125 + 625);
        CHECK_FALSE(session_next_part(node_status::ok, 3, 4));  // the last part ends the node
    }
}
