// extend_decision as extend_op drives it: start() with the lock and the time,
// then every node's reply through on_reply(). The checks before sending, then
// every combination of answers (extended, another value, missing, an error, a
// timeout, NOSCRIPT then extended by EVAL) in every rotation of the answer
// order on 1, 3, 5 and 7 nodes: when it decides, the verdict and its reason,
// the report, the repairs (at once and late) and the new deadline. No clock.
#include "canned_reply.hpp"
#include "extend_flow_support.hpp"
#include "sansio/timing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::detail;
using redlock::errc;
using redlock::node_status;
using redlock_test::canned_reply;
using namespace redlock_test::extend_flow;

namespace {

// What a node answers in an enumerated case. A failure is an error reply on
// an even node and a timeout on an odd one: both kinds are played without
// multiplying the cases.
enum class kind : std::uint8_t { extended, other_value, missing, failed, noscript };
constexpr std::size_t kinds = 5;

// The TTL left that node i reports when it extends: a different one each.
auto ttl_left(std::size_t node) -> long long {
    return 10'000 - 10 * static_cast<long long>(node);
}

auto reply_of(kind k, std::size_t node) -> canned_reply {
    switch (k) {
        case kind::extended:
        case kind::noscript:  // what the EVAL form answers, once resent
            return canned_reply::integer(ttl_left(node));
        case kind::other_value:
            return canned_reply::integer(0);
        case kind::missing:
            return canned_reply::integer(-1);
        case kind::failed:
            return node % 2 == 0 ? canned_reply::error("ERR boom") : canned_reply::timeout();
    }
    return canned_reply::nil();
}

auto status_of(kind k, std::size_t node) -> node_status {
    switch (k) {
        case kind::extended:
        case kind::noscript:
            return node_status::ok;
        case kind::other_value:
        case kind::missing:
            return node_status::refused;
        case kind::failed:
            return node % 2 == 0 ? node_status::error : node_status::timeout;
    }
    return node_status::cancelled;
}

auto acts(const extend_actions& a) -> bool {
    return a.send_extends || a.resend_as_eval || a.repair_late || a.repair_missing ||
           a.end != ending::none;
}

}  // namespace

TEST_SUITE("extend decision: start") {
    TEST_CASE("refused before sending: a bad argument, or a lock no longer ours at now") {
        struct one {
            const char* what;
            extend_lock_view lock;
            std::chrono::milliseconds ttl;
            time_point now;
            errc code;
            std::string message;  // empty: sent
        };
        auto with = [](auto change) {
            extend_lock_view l = held_lock(t0 + 5s);
            change(l);
            return l;
        };
        const std::string gone = "cannot extend 'orders:42': ";
        const one cases[] = {
            {"empty handle", extend_lock_view{}, 10'000ms, t0, errc::invalid_argument,
             "extend of an empty lock handle"},
            {"ttl 0", held_lock(t0 + 5s), 0ms, t0, errc::invalid_argument,
             "ttl must be greater than 0 ms"},
            {"ttl -1", held_lock(t0 + 5s), -1ms, t0, errc::invalid_argument,
             "ttl must be greater than 0 ms"},
            {"ttl above the cap", held_lock(t0 + 5s), max_ttl + 1ms, t0, errc::invalid_argument,
             "ttl must be at most 2147483647 ms"},
            {"ttl at the cap", held_lock(t0 + 5s), max_ttl, t0, errc::not_held, ""},
            {"released", with([](auto& l) { l.released = true; }), 10'000ms, t0, errc::not_held,
             gone + "it was released"},
            {"released and lost", with([](auto& l) { l.released = l.lost = true; }), 10'000ms, t0,
             errc::not_held, gone + "it was released"},
            {"lost", with([](auto& l) { l.lost = true; }), 10'000ms, t0, errc::not_held,
             gone + "it was lost"},
            {"validity ends exactly now", held_lock(t0), 10'000ms, t0, errc::not_held,
             gone + "its validity had already ended"},
            {"validity ended", held_lock(t0), 10'000ms, t0 + 1ns, errc::not_held,
             gone + "its validity had already ended"},
            {"validity ends in 1 ns", held_lock(t0 + 1ns), 10'000ms, t0, errc::not_held, ""},
            {"adopted, deadline unknown", with([](auto& l) {
                 l.adopted = true;
                 l.valid_until = {};
             }),
             10'000ms, t0, errc::not_held, ""},
            {"adopted but released", with([](auto& l) { l.adopted = l.released = true; }), 10'000ms,
             t0, errc::not_held, gone + "it was released"},
        };
        for (const auto& c : cases) {
            INFO(c.what);
            extend_decision d{3, {.ttl = c.ttl}};
            const extend_actions a = d.start(c.lock, c.now);
            if (c.message.empty()) {
                CHECK(a.send_extends);
                CHECK(a.end == ending::none);
                CHECK(d.open());
                continue;
            }
            CHECK_FALSE(a.send_extends);
            REQUIRE(a.end == ending::refused);
            CHECK(a.code == c.code);
            CHECK(a.message == c.message);
            const redlock::error e = d.failure_error(a, name_of);
            CHECK(e.code == make_error_code(c.code));
            CHECK(e.message == c.message);
            CHECK(e.nodes.empty());  // nothing was asked
            CHECK_FALSE(d.open());
            // Nothing was sent, so nothing that comes is heard.
            const canned_reply yes = canned_reply::integer(10'000);
            CHECK_FALSE(acts(d.on_reply(0, script_form::evalsha, yes.event(), c.lock, c.now)));
        }
    }
}

TEST_SUITE("extend decision: every reply order") {
    TEST_CASE(
        "decides at the reply that settles the majority, with the report, repairs and deadline") {
        const std::string not_held_message =
            "cannot extend 'orders:42': a majority of nodes no longer hold it; it stays valid "
            "until its previous deadline";
        const std::string unreachable_message =
            "cannot extend 'orders:42': fewer than a majority of nodes confirmed in time; it "
            "stays valid until its previous deadline";
        for (const std::size_t n : {1U, 3U, 5U, 7U}) {
            const std::size_t needed = n / 2 + 1;
            std::size_t cases = 0;
            redlock_test::for_each_answers(
                n, kinds, [&](const std::vector<std::size_t>& seq, std::size_t code) {
                    ++cases;
                    redlock_test::case_checks c;
                    const auto order = redlock_test::answer_order(n, code);
                    const extend_lock_view lock = held_lock(t0 + 5s);
                    extend_decision d{n, settings};
                    REDLOCK_EXPECT(c, d.start(lock, t0).send_extends);
                    const time_point now = t0 + 7ms;  // every reply 7 ms after the requests
                    std::size_t yes = 0;
                    std::size_t refused = 0;
                    std::size_t decided_after = 0;
                    long long least_left = 0;
                    std::vector<bool> missing(n, false);
                    extend_actions verdict;
                    std::vector<node_status> statuses_at_verdict;
                    for (std::size_t k = 0; k < n; ++k) {
                        const std::size_t node = order[k];
                        const kind answer = static_cast<kind>(seq[k]);
                        script_form form = script_form::evalsha;
                        if (answer == kind::noscript) {
                            const canned_reply noscript = canned_reply::noscript();
                            const extend_actions a =
                                d.on_reply(node, form, noscript.event(), lock, now);
                            if (decided_after != 0) {
                                REDLOCK_EXPECT(c, !acts(a));  // decided: not resent, not counted
                                continue;
                            }
                            REDLOCK_EXPECT(c, a.resend_as_eval == node);
                            REDLOCK_EXPECT(c, a.end == ending::none);
                            form = script_form::eval;  // the shell resends; this is its answer
                        }
                        const canned_reply r = reply_of(answer, node);
                        const extend_actions a = d.on_reply(node, form, r.event(), lock, now);
                        REDLOCK_EXPECT(c, !a.resend_as_eval);
                        if (decided_after != 0) {
                            // After the verdict only a "missing" straggler of a success acts:
                            // it is repaired.
                            const bool repair =
                                verdict.end == ending::extended && answer == kind::missing;
                            REDLOCK_EXPECT(
                                c, a.repair_late == (repair ? std::optional{node} : std::nullopt));
                            REDLOCK_EXPECT(c, a.end == ending::none && !a.repair_missing);
                            continue;
                        }
                        REDLOCK_EXPECT(c, !a.repair_late);
                        if (status_of(answer, node) == node_status::ok) {
                            least_left =
                                yes == 0 ? ttl_left(node) : std::min(least_left, ttl_left(node));
                            ++yes;
                        }
                        refused += status_of(answer, node) == node_status::refused ? 1 : 0;
                        missing[node] = answer == kind::missing;
                        const bool decides = yes >= needed || yes + (n - k - 1) < needed;
                        if (!decides) {
                            REDLOCK_EXPECT(c, a.end == ending::none && !a.repair_missing);
                            continue;
                        }
                        decided_after = k + 1;
                        verdict = a;
                        REDLOCK_EXPECT(c, !d.open());
                        REDLOCK_EXPECT(c, a.took == 7ms);
                        if (yes >= needed) {
                            if (!REDLOCK_EXPECT(c, a.end == ending::extended)) break;
                            // The least TTL the majority reported, less elapsed time and drift.
                            const auto v = validity(std::chrono::milliseconds{least_left}, 7ms,
                                                    settings.drift_factor, settings.drift_floor);
                            REDLOCK_EXPECT(c, a.deadline == now + v);
                            REDLOCK_EXPECT(c, a.remaining == v);
                            REDLOCK_EXPECT(
                                c, a.repair_missing == (std::find(missing.begin(), missing.end(),
                                                                  true) != missing.end()));
                            for (std::size_t i = 0; i < n; ++i)
                                REDLOCK_EXPECT(c, d.missing(i) == missing[i]);
                            continue;
                        }
                        if (!REDLOCK_EXPECT(c, a.end == ending::failed)) break;
                        REDLOCK_EXPECT(c, !a.repair_missing);
                        const bool definite = refused > n - needed;
                        REDLOCK_EXPECT(
                            c, a.code == (definite ? errc::not_held : errc::quorum_unreachable));
                        REDLOCK_EXPECT(
                            c, a.message == (definite ? not_held_message : unreachable_message));
                        // What failure_error() reports (its rendering: "a failure names
                        // every node"): the counts, and each node as it answered.
                        REDLOCK_EXPECT(c, d.tally().yes_count() == yes);
                        REDLOCK_EXPECT(c, d.tally().refused_count() == refused);
                        REDLOCK_EXPECT(c, d.tally().failed_count() == k + 1 - yes - refused);
                        for (std::size_t j = 0; j < n; ++j) {
                            // Those that answered by the verdict as they said; the rest had
                            // not answered.
                            const node_status st = d.nodes().status(order[j]);
                            REDLOCK_EXPECT(
                                c, st == (j <= k ? status_of(static_cast<kind>(seq[j]), order[j])
                                                 : node_status::cancelled));
                            REDLOCK_EXPECT(
                                c, st == node_status::ok || !d.nodes().detail(order[j]).empty());
                            statuses_at_verdict.push_back(d.nodes().status(j));
                        }
                    }
                    REDLOCK_EXPECT(c, decided_after != 0);  // every node answered: always decided
                    // Late answers are not part of the report, nor of its counts.
                    for (std::size_t i = 0; i < statuses_at_verdict.size(); ++i)
                        REDLOCK_EXPECT(c, d.nodes().status(i) == statuses_at_verdict[i]);
                    if (verdict.end == ending::failed)
                        REDLOCK_EXPECT(c, d.tally().yes_count() + d.tally().refused_count() +
                                                  d.tally().failed_count() ==
                                              decided_after);
                    if (c.failed()) FAIL_CHECK("n=" << n << " case " << code << c.failures());
                });
            std::size_t expected = 1;
            for (std::size_t i = 0; i < n; ++i) expected *= kinds;
            CHECK(cases == expected);
        }
    }
}
