// renewal_decision, the watchdog's decisions for one lock: what a renewal tick
// sends and when the next is due, when the lock counts as lost, and what the
// loss report holds. Every sequence of timer expiries, renewal outcomes and a
// release, against a model of the rules; and every combination and order of
// node answers to a renewal on 1, 3, 5 and 7 nodes, decided by extend_decision
// and fed to the renewal; when a lost lock's keys may be released. Times are
// values; no clock, no socket.
#include "sansio/renewal_decision.hpp"

#include "canned_reply.hpp"
#include "sansio/delay_policy.hpp"
#include "sansio/extend_decision.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::detail;
using redlock::errc;
using redlock::node_report;
using redlock::node_status;
using redlock_test::canned_reply;
using ending = renewal_actions::ending;
using time_point = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

namespace {

// Any moment will do: the decisions see only differences. (Not `t0`: release_flow_test has
// one, and a unity build puts the two files in one unit.)
const time_point origin{std::chrono::seconds{1000}};
constexpr renewal_settings settings{
    .nodes = 3, .ttl = 3'000ms, .renew_fraction = 1.0 / 3.0, .request_timeout = 50ms};

auto name_of(std::size_t i) -> std::string {
    return "n" + std::to_string(i);
}

auto failure_of(errc code, std::string message, std::vector<node_report> nodes)
    -> redlock::result<milliseconds> {
    return redlock::failure{redlock::error{make_error_code(code), std::move(message), nodes, 0}};
}

const std::vector<node_report> timeouts{{"n0", node_status::timeout, "no reply within 50 ms"},
                                        {"n1", node_status::timeout, "no reply within 50 ms"},
                                        {"n2", node_status::ok, ""}};
const std::vector<node_report> refusals{{"n0", node_status::refused, "holds another value"},
                                        {"n1", node_status::refused, "holds another value"},
                                        {"n2", node_status::ok, ""}};

enum class event : std::uint8_t {
    renew_timer,
    extended,        // the renewal went through
    unanswered,      // quorum_unreachable: too few answers
    refused,         // not_held: a majority no longer hold it
    invalid,         // invalid_argument: could not be asked (no node answers)
    deadline_early,  // the deadline timer, before the deadline
    deadline,        // the deadline timer, at or after it
    release,         // released (from any thread): the flag is set
};
constexpr std::size_t events = 8;

auto is_outcome(event e) -> bool {
    return e == event::extended || e == event::unanswered || e == event::refused ||
           e == event::invalid;
}

// Plays one sequence of events into a renewal decision and checks each
// action against the rules; `played` counts the sequences played to the end.
void play_sequence(redlock_test::case_checks& c, const std::vector<std::size_t>& seq,
                   std::size_t& played) {
    renewal_decision d{settings};
    time_point now = origin;
    renewal_lock_view lock{origin + 2'900ms, false};
    // The model.
    bool renewing = false;
    std::vector<node_report> kept;  // the last failed renewal's answers
    (void)d.start(lock, now);
    for (std::size_t k = 0; k < seq.size(); ++k) {
        const auto e = static_cast<event>(seq[k]);
        // The shell asks for an outcome only of a renewal it sent, and
        // the deadline timer never fires early after the deadline.
        if (is_outcome(e) && !renewing) return;
        if (e == event::deadline_early && now >= lock.valid_until) return;
        now += 10ms;
        renewal_actions a;
        switch (e) {
            case event::renew_timer:
                a = d.on_renew_timer();
                // One renewal at a time.
                REDLOCK_EXPECT(c, a.send_extend == !renewing);
                REDLOCK_EXPECT(c, !(a.renew_in));
                REDLOCK_EXPECT(c, !(a.deadline_in));
                REDLOCK_EXPECT(c, a.end == ending::none);
                renewing = true;
                break;
            case event::extended:
                lock.valid_until = now + 2'900ms;  // extend_op moved it
                a = d.on_extended(milliseconds{2'900}, lock, now);
                REDLOCK_EXPECT(c, a.renewed);
                REDLOCK_EXPECT(c, a.renew_in == 1'000ms);
                REDLOCK_EXPECT(c, a.deadline_in == 2'900ms);
                REDLOCK_EXPECT(c, a.end == ending::none);
                renewing = false;
                kept.clear();
                break;
            case event::unanswered:
                a = d.on_extended(failure_of(errc::quorum_unreachable, "too few", timeouts), lock,
                                  now);
                REDLOCK_EXPECT(c, !(a.renewed));
                REDLOCK_EXPECT(c, a.renew_in == renew_retry_gap(settings.request_timeout));
                REDLOCK_EXPECT(c, !(a.deadline_in));  // the deadline stands
                REDLOCK_EXPECT(c, a.end == ending::none);
                renewing = false;
                kept = timeouts;
                break;
            case event::refused:
            case event::invalid: {
                const bool refused = e == event::refused;
                const auto& nodes = refused ? refusals : std::vector<node_report>{};
                a = d.on_extended(failure_of(refused ? errc::not_held : errc::invalid_argument,
                                             "cannot extend 'orders:42': why", nodes),
                                  lock, now);
                REDLOCK_EXPECT(c, !(a.renewed));
                REDLOCK_EXPECT(c, !(a.renew_in));
                if (refused) kept = refusals;  // none given: the older ones stay
                REDLOCK_EXPECT(c, d.last_nodes().size() == kept.size());
                if (lock.released) {
                    // Released meanwhile: not lost.
                    REDLOCK_EXPECT(c, a.end == ending::forget);
                    return;
                }
                REDLOCK_EXPECT(c, a.end == ending::lost);
                REDLOCK_EXPECT(c, a.loss.cause == loss_cause::refused);
                REDLOCK_EXPECT(c, a.loss.reason == "cannot extend 'orders:42': why");
                const redlock::error why = d.loss_error(a.loss, "orders:42", name_of);
                REDLOCK_EXPECT(c, why.code == make_error_code(errc::lock_lost));
                REDLOCK_EXPECT(c, why.message ==
                                      "lock on 'orders:42' lost: cannot extend "
                                      "'orders:42': why");
                // This renewal's answers.
                REDLOCK_EXPECT(c, why.nodes.size() == nodes.size());
                return;
            }
            case event::deadline_early:
                a = d.on_deadline_timer(lock, now);
                REDLOCK_EXPECT(
                    c, a.deadline_in == std::chrono::ceil<milliseconds>(lock.valid_until - now));
                REDLOCK_EXPECT(c, !(a.renew_in));
                REDLOCK_EXPECT(c, !(a.send_extend));
                REDLOCK_EXPECT(c, a.end == ending::none);
                break;
            case event::deadline: {
                now = std::max(now, lock.valid_until);
                a = d.on_deadline_timer(lock, now);
                REDLOCK_EXPECT(c, !(a.deadline_in));
                if (lock.released) {
                    REDLOCK_EXPECT(c, a.end == ending::forget);
                    return;
                }
                REDLOCK_EXPECT(c, a.end == ending::lost);
                REDLOCK_EXPECT(c, a.loss.cause == loss_cause::validity_ended);
                REDLOCK_EXPECT(c, a.loss.renewal_in_flight == renewing);
                const redlock::error why = d.loss_error(a.loss, "orders:42", name_of);
                REDLOCK_EXPECT(c, why.code == make_error_code(errc::lock_lost));
                REDLOCK_EXPECT(c, why.message ==
                                      "lock on 'orders:42' lost: no renewal reached a "
                                      "majority before its validity ended");
                if (!REDLOCK_EXPECT(c, why.nodes.size() == 3)) return;
                for (std::size_t i = 0; i < 3; ++i) {
                    if (!kept.empty()) {
                        // The last failed renewal's answers.
                        REDLOCK_EXPECT(c, why.nodes[i].status == kept[i].status);
                        REDLOCK_EXPECT(c, why.nodes[i].detail == kept[i].detail);
                    } else {
                        // None failed yet: every node is still to answer.
                        REDLOCK_EXPECT(c, why.nodes[i].node == name_of(i));
                        REDLOCK_EXPECT(c, why.nodes[i].status == node_status::pending);
                        REDLOCK_EXPECT(
                            c, why.nodes[i].detail ==
                                   (renewing ? "no answer yet to the renewal in flight" : ""));
                    }
                }
                return;
            }
            case event::release:
                lock.released = true;
                break;
        }
        REDLOCK_EXPECT(c, d.renewing() == renewing);
    }
    ++played;
}

// One renewal whose nodes answer `seq` (node order[k] k-th), decided by
// extend_decision and fed to the renewal decision, checked against the rule:
// renewed on a majority of yes, lost at once on a majority of "not ours",
// otherwise retried, with the answers kept for a loss at the deadline.
void play_renewal_answers(redlock_test::case_checks& c, std::size_t n,
                          const std::vector<std::size_t>& seq, std::size_t code) {
    const extend_answer answers[] = {extend_answer::extended, extend_answer::other_value,
                                     extend_answer::missing, extend_answer::failed};
    const std::size_t needed = n / 2 + 1;
    const auto order = redlock_test::answer_order(n, code);
    const renewal_settings s{.nodes = n, .ttl = 3'000ms};
    renewal_decision renewal{s};
    const extend_lock_view held{
        .empty = false, .resource = "orders:42", .valid_until = origin + 2'900ms};
    (void)renewal.start({held.valid_until, false}, origin);
    REDLOCK_EXPECT(c, renewal.on_renew_timer().send_extend);
    // The renewal, decided by the extension from the nodes' answers.
    extend_decision extend{n, {.ttl = s.ttl}};
    REDLOCK_EXPECT(c, extend.start(held, origin).send_extends);
    const time_point now = origin + 5ms;
    extend_actions verdict;
    std::size_t yes = 0;
    std::size_t refused = 0;
    for (std::size_t k = 0; k < n && verdict.end == extend_actions::ending::none; ++k) {
        const extend_answer a = answers[seq[k]];
        const canned_reply r = a == extend_answer::extended      ? canned_reply::integer(3'000)
                               : a == extend_answer::other_value ? canned_reply::integer(0)
                               : a == extend_answer::missing     ? canned_reply::integer(-1)
                                                                 : canned_reply::timeout();
        yes += a == extend_answer::extended ? 1 : 0;
        refused += a == extend_answer::other_value || a == extend_answer::missing;
        verdict = extend.on_reply(order[k], script_form::evalsha, r.event(), held, now);
    }
    if (!REDLOCK_EXPECT(c, verdict.end != extend_actions::ending::none)) return;
    const redlock::result<milliseconds> outcome =
        verdict.end == extend_actions::ending::extended
            ? redlock::result<milliseconds>{verdict.remaining}
            : redlock::failure{extend.failure_error(verdict, name_of)};
    const renewal_lock_view after{
        verdict.end == extend_actions::ending::extended ? verdict.deadline : held.valid_until,
        false};
    const renewal_actions a = renewal.on_extended(outcome, after, now);
    if (yes >= needed) {
        REDLOCK_EXPECT(c, a.renewed);
        REDLOCK_EXPECT(c, a.end == ending::none);
        REDLOCK_EXPECT(c, a.deadline_in == std::chrono::ceil<milliseconds>(verdict.deadline - now));
        return;
    }
    REDLOCK_EXPECT(c, !(a.renewed));
    if (refused > n - needed) {
        // A majority said it is not ours: lost at once, with their answers.
        REDLOCK_EXPECT(c, a.end == ending::lost);
        REDLOCK_EXPECT(c, a.loss.cause == loss_cause::refused);
        const redlock::error why = renewal.loss_error(a.loss, "orders:42", name_of);
        REDLOCK_EXPECT(c, why.message.starts_with("lock on 'orders:42' lost: cannot "
                                                  "extend 'orders:42': a majority of "
                                                  "nodes no longer hold it"));
        if (!REDLOCK_EXPECT(c, why.nodes.size() == n)) return;
        for (std::size_t i = 0; i < n; ++i) {
            REDLOCK_EXPECT(c, why.nodes[i].node == name_of(i));
            REDLOCK_EXPECT(c, why.nodes[i].status == extend.nodes().status(i));
        }
        return;
    }
    // Too few answers: retried soon, and the answers kept for a loss at the
    // deadline.
    REDLOCK_EXPECT(c, a.end == ending::none);
    REDLOCK_EXPECT(c, a.renew_in == renew_retry_gap(s.request_timeout));
    const renewal_actions at_deadline = renewal.on_deadline_timer(after, held.valid_until);
    REDLOCK_EXPECT(c, at_deadline.end == ending::lost);
    const redlock::error why = renewal.loss_error(at_deadline.loss, "orders:42", name_of);
    if (!REDLOCK_EXPECT(c, why.nodes.size() == n)) return;
    for (std::size_t i = 0; i < n; ++i)
        REDLOCK_EXPECT(c, why.nodes[i].status == extend.nodes().status(i));
}

}  // namespace

TEST_SUITE("renewal decision") {
    TEST_CASE("watching starts: the first renewal a fraction of the TTL away, the deadline armed") {
        struct one {
            milliseconds ttl;
            double fraction;
            std::chrono::nanoseconds left;
            milliseconds renew_in;
            milliseconds deadline_in;
        };
        const one cases[] = {
            {3'000ms, 1.0 / 3.0, 2'938'500us, 1'000ms, 2'939ms},  // deadline rounded up
            {400ms, 1.0 / 3.0, 388ms, 134ms, 388ms},              // renewal rounded up
            {1ms, 0.1, 1ns, 1ms, 1ms},                            // at least 1 ms
            {10'000ms, 0.5, 0ns, 5'000ms, 0ms},                   // validity ends now
        };
        for (const auto& c : cases) {
            const renewal_decision d{{.nodes = 3, .ttl = c.ttl, .renew_fraction = c.fraction}};
            const renewal_actions a = d.start({origin + c.left, false}, origin);
            CHECK(a.renew_in == c.renew_in);
            CHECK(a.deadline_in == c.deadline_in);
            CHECK_FALSE(a.send_extend);
            CHECK(a.end == ending::none);
        }
    }

    TEST_CASE("every sequence of timers, renewal outcomes and a release, against the rules") {
        constexpr std::size_t length = 5;
        std::size_t played = 0;
        redlock_test::for_each_answers(length, events,
                                       [&](const std::vector<std::size_t>& seq, std::size_t code) {
                                           redlock_test::case_checks c;
                                           play_sequence(c, seq, played);
                                           if (c.failed())
                                               FAIL_CHECK("case " << code << c.failures());
                                       });
        CHECK(played > 0);
    }

    TEST_CASE("a renewal's answers on 1, 3, 5 and 7 nodes: renewed, retried, or lost") {
        for (const std::size_t n : {1U, 3U, 5U, 7U}) {
            redlock_test::for_each_answers(
                n, 4, [&](const std::vector<std::size_t>& seq, std::size_t code) {
                    redlock_test::case_checks c;
                    play_renewal_answers(c, n, seq, code);
                    if (c.failed()) FAIL_CHECK("n=" << n << " case " << code << c.failures());
                });
        }
    }

    TEST_CASE("a lost lock's keys are left alone until its validity has ended") {
        // Every offset of `now` from the deadline, -5 ms to +5 ms in 100 µs steps: the
        // release waits at least until the deadline, rounded up to a whole millisecond,
        // and goes at once from the deadline on.
        const time_point deadline{std::chrono::seconds{5000}};
        for (int step = -50; step <= 50; ++step) {
            const time_point now = deadline + step * std::chrono::microseconds{100};
            const auto wait = lost_release_delay(deadline, now);
            if (now >= deadline) {
                CHECK(wait == 0ms);
            } else {
                CHECK(now + wait >= deadline);
                CHECK(now + wait < deadline + 1ms);
            }
        }
        CHECK(lost_release_delay(deadline, deadline - 900ms) == 900ms);
        CHECK(lost_release_delay(time_point{}, deadline) == 0ms);  // never valid: at once
    }
}
