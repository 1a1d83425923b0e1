// release_decision as release_op drives it: every node's reply through
// on_reply() and the grace timer through on_grace_timer(). Every combination
// of answers (deleted, not held, an error, a timeout, NOSCRIPT then deleted by
// EVAL) in every rotation of the answer order on 1, 3, 5 and 7 nodes, with
// the grace timer firing after each possible number of later replies: when it
// is started, when the report goes out, what it holds, and how the replies
// after it are counted. Times are values; no clock.
#include "canned_reply.hpp"
#include "sansio/release_decision.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::detail;
using redlock::node_status;
using redlock_test::canned_reply;
using step = release_decision::step;
using late = release_decision::late;
using time_point = std::chrono::steady_clock::time_point;

namespace {

const time_point t0{std::chrono::seconds{1000}};

enum class kind : std::uint8_t { deleted, not_held, error, timeout, noscript };
constexpr std::size_t kinds = 5;

auto reply_of(kind k) -> canned_reply {
    switch (k) {
        case kind::deleted:
        case kind::noscript:  // what the EVAL form answers, once resent
            return canned_reply::integer(1);
        case kind::not_held:
            return canned_reply::integer(0);
        case kind::error:
            return canned_reply::error("READONLY You can't write against a read only replica.");
        case kind::timeout:
            return canned_reply::timeout();
    }
    return canned_reply::nil();
}

auto status_of(kind k) -> node_status {
    switch (k) {
        case kind::deleted:
        case kind::noscript:
            return node_status::ok;
        case kind::not_held:
            return node_status::refused;
        case kind::error:
            return node_status::error;
        case kind::timeout:
            return node_status::timeout;
    }
    return node_status::cancelled;
}

// The time of the k-th reply (from 0): 1.5 ms apart, so that the grace
// period's rounding shows.
auto time_of_reply(std::size_t k) -> time_point {
    return t0 + std::chrono::microseconds{1500 * static_cast<long long>(k + 1)};
}

}  // namespace

TEST_SUITE("release decision: every reply order") {
    TEST_CASE("grace once decided, the report at the last answer or the grace timer, then late") {
        for (const std::size_t n : {1U, 3U, 5U, 7U}) {
            const std::size_t needed = n / 2 + 1;
            redlock_test::for_each_answers(
                n, kinds, [&](const std::vector<std::size_t>& seq, std::size_t code) {
                    const auto order = redlock_test::answer_order(n, code);
                    // The grace timer fires after `gap` more replies once started.
                    for (std::size_t gap = 0; gap <= n; ++gap) {
                        redlock_test::case_checks c;
                        release_decision d{n};
                        d.start(t0);
                        std::size_t deleted = 0;
                        std::size_t heard = 0;
                        std::optional<std::size_t> grace_at;  // replies heard when it started
                        bool reported = false;
                        bool timer_fired = false;
                        auto report = [&] {
                            reported = true;
                            REDLOCK_EXPECT(c, d.deleted() == deleted);
                            REDLOCK_EXPECT(c, d.needed() == needed);
                            REDLOCK_EXPECT(c, d.pending() == n - heard);
                            for (std::size_t j = 0; j < n; ++j) {
                                const std::size_t node = order[j];
                                const node_status expected =
                                    j < heard ? status_of(static_cast<kind>(seq[j]))
                                              : node_status::pending;
                                REDLOCK_EXPECT(c, d.nodes().status(node) == expected);
                                if (expected != node_status::ok)
                                    REDLOCK_EXPECT(c, !d.nodes().detail(node).empty());
                            }
                        };
                        for (std::size_t k = 0; k < n; ++k) {
                            const std::size_t node = order[k];
                            const kind answer = static_cast<kind>(seq[k]);
                            script_form form = script_form::evalsha;
                            if (answer == kind::noscript) {
                                const canned_reply noscript = canned_reply::noscript();
                                const auto a = d.on_reply(node, form, noscript.event());
                                // Resent whether or not the report is out.
                                REDLOCK_EXPECT(c, a.resend_as_eval);
                                REDLOCK_EXPECT(c, a.after_report == late::no);
                                REDLOCK_EXPECT(c, a.next == step::wait);
                                form = script_form::eval;
                            }
                            const canned_reply r = reply_of(answer);
                            const auto a = d.on_reply(node, form, r.event());
                            REDLOCK_EXPECT(c, !a.resend_as_eval);
                            const bool yes = status_of(answer) == node_status::ok;
                            if (reported) {
                                // Decided without it: counted, not reported.
                                REDLOCK_EXPECT(
                                    c, a.after_report == (yes ? late::deleted : late::failed));
                                REDLOCK_EXPECT(c, a.next == step::wait);
                                continue;
                            }
                            REDLOCK_EXPECT(c, a.after_report == late::no);
                            deleted += yes ? 1 : 0;
                            ++heard;
                            const bool decided =
                                deleted >= needed || deleted + (n - heard) < needed;
                            if (heard == n) {
                                REDLOCK_EXPECT(c, a.next == step::finish);
                                report();
                            } else if (decided && !grace_at) {
                                REDLOCK_EXPECT(c, a.next == step::start_grace);
                                grace_at = heard;
                                // As long again as the decision took, in whole ms, at least 1.
                                const auto took = std::chrono::floor<std::chrono::milliseconds>(
                                    time_of_reply(k) - t0);
                                REDLOCK_EXPECT(
                                    c, d.grace_timeout(time_of_reply(k)) == std::max(took, 1ms));
                            } else {
                                REDLOCK_EXPECT(c, a.next == step::wait);
                            }
                            if (grace_at && !reported && heard == *grace_at + gap) {
                                timer_fired = true;
                                REDLOCK_EXPECT(c, d.on_grace_timer() == step::finish);
                                report();
                            }
                        }
                        REDLOCK_EXPECT(c, reported);
                        // A grace timer that comes after the report does nothing (the shell
                        // cancels it; this is the race where it fired anyway).
                        REDLOCK_EXPECT(c, d.on_grace_timer() == step::wait);
                        if (c.failed())
                            FAIL_CHECK("n=" << n << " case " << code << " gap " << gap
                                            << c.failures());
                        if (!timer_fired) break;  // larger gaps play the same
                    }
                });
        }
    }
}

TEST_SUITE("release decision: replies and times") {
    TEST_CASE("what a reply to the release script says of its node") {
        struct one {
            const char* what;
            canned_reply r;
            node_status status;
            const char* detail;
        };
        const one cases[] = {
            {"deleted", canned_reply::integer(1), node_status::ok, ""},
            {"deleted several keys", canned_reply::integer(3), node_status::ok, ""},
            {"not held", canned_reply::integer(0), node_status::refused,
             "not held with this value (expired, or taken over)"},
            {"a negative integer", canned_reply::integer(-1), node_status::error,
             "unexpected integer -1"},
            {"nil", canned_reply::nil(), node_status::error, "unexpected nil reply"},
            {"an error", canned_reply::error("OOM command not allowed"), node_status::error,
             "OOM command not allowed"},
            {"timeout", canned_reply::timeout(), node_status::timeout, "no reply within 50 ms"},
            {"unreachable", canned_reply::failed(request_status::unreachable, "not connected"),
             node_status::unreachable, "not connected"},
            {"stopped", canned_reply::failed(request_status::stopped, "client stopping"),
             node_status::cancelled, "client stopping"},
        };
        for (const auto& c : cases) {
            INFO(c.what);
            const node_outcome o = release_decision::outcome_of(c.r.event());
            CHECK(o.status == c.status);
            CHECK(o.detail == c.detail);
        }
    }

    TEST_CASE("NOSCRIPT to EVAL is a failed answer, not resent again") {
        release_decision d{1};
        d.start(t0);
        const canned_reply noscript = canned_reply::noscript();
        const auto a = d.on_reply(0, script_form::eval, noscript.event());
        CHECK_FALSE(a.resend_as_eval);
        CHECK(a.next == step::finish);
        CHECK(d.deleted() == 0);
        CHECK(d.nodes().status(0) == node_status::error);
    }

    TEST_CASE("the grace timeout and the latency come from the times passed in") {
        release_decision d{3};
        d.start(t0);
        CHECK(d.grace_timeout(t0) == 1ms);
        CHECK(d.grace_timeout(t0 + 999us) == 1ms);
        CHECK(d.grace_timeout(t0 + 2999us) == 2ms);
        CHECK(d.grace_timeout(t0 + 37ms) == 37ms);
        CHECK(d.took(t0 + 1234567ns) == 1234567ns);
    }
}
