// `redlock run`'s signal timeline (cli/run_timeline.hpp) without processes: every
// policy, validity end, SIGTERM lead, kill_after, lost flag and SIGTERM time on a
// millisecond grid, against the rule written out here; then the shell's loop played
// whole, waking only when decide() says, to check that SIGKILL never comes after the
// end of the validity and that no wake-up is late.

#include "run_timeline.hpp"

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <optional>

namespace {

using redlock::cli::decide_run_signal;
using redlock::cli::run_policy;
using redlock::cli::run_timeline_input;
using redlock::cli::run_timeline_settings;
using redlock::cli::run_timeline_step;
using ms = std::chrono::milliseconds;
using time_point = std::chrono::steady_clock::time_point;

const time_point origin{std::chrono::hours{1}};

auto at(long long t) -> time_point {
    return origin + ms{t};
}

constexpr std::array policies{run_policy::term, run_policy::kill, run_policy::ignore};
constexpr std::array term_befores{0LL, 4LL, 10LL, 100LL};
constexpr std::array kill_afters{0LL, 3LL, 12LL, 1000LL};
constexpr std::array kill_leads{0LL, 5LL};

/// The rule, written out apart from the code.
auto expected(const run_timeline_settings& s, const run_timeline_input& in) -> run_timeline_step {
    run_timeline_step e;
    if (s.policy == run_policy::ignore || in.kill_sent) return e;
    const bool past_validity = in.now + s.kill_lead >= in.valid_until;
    const bool term_expired = in.term_sent && in.now >= *in.term_sent + s.kill_after;
    const bool due = in.lost || in.now + s.term_before >= in.valid_until;
    if (past_validity || term_expired || (due && s.policy == run_policy::kill)) {
        e.kill = true;
        return e;
    }
    e.term = due && !in.term_sent;
    return e;
}

}  // namespace

TEST_CASE(
    "run timeline: every case on the grid signals as the rule says, and the next look "
    "comes before any change") {
    long long cases = 0;
    for (const run_policy policy : policies) {
        for (const long long before : term_befores) {
            for (const long long after : kill_afters) {
                for (const long long lead : kill_leads) {
                    const run_timeline_settings s{policy, ms{before}, ms{after}, ms{lead}};
                    for (long long valid = 0; valid <= 30; valid += 3) {
                        for (long long now = 0; now <= 36; ++now) {
                            for (const bool lost : {false, true}) {
                                for (const bool killed : {false, true}) {
                                    for (long long sent = -1; sent <= now; ++sent) {
                                        run_timeline_input in{at(now), at(valid), lost,
                                                              std::nullopt, killed};
                                        if (sent >= 0) in.term_sent = at(sent);
                                        const run_timeline_step got = decide_run_signal(s, in);
                                        const run_timeline_step want = expected(s, in);
                                        ++cases;
                                        REQUIRE(got.term == want.term);
                                        REQUIRE(got.kill == want.kill);
                                        if (got.kill || policy == run_policy::ignore || killed) {
                                            continue;
                                        }
                                        // Asleep until `next`, nothing new may come due.
                                        REQUIRE(got.next.has_value());
                                        // (Right after a SIGTERM with kill_after 0, SIGKILL is due
                                        // at once.)
                                        REQUIRE((*got.next > in.now || got.term));
                                        run_timeline_input later = in;
                                        if (got.term) later.term_sent = in.now;
                                        for (time_point t = in.now + ms{1}; t < *got.next;
                                             t += ms{1}) {
                                            later.now = t;
                                            const run_timeline_step mid =
                                                decide_run_signal(s, later);
                                            REQUIRE_FALSE(mid.term);
                                            REQUIRE_FALSE(mid.kill);
                                        }
                                        // ...and at `next`, something does.
                                        later.now = *got.next;
                                        const run_timeline_step then = decide_run_signal(s, later);
                                        REQUIRE((then.term || then.kill));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    CHECK(cases > 600'000);
}

TEST_CASE(
    "run timeline: played whole, the command is killed kill_lead before the end of the "
    "validity, and warned term_before ahead") {
    // The renewals fail from the start: the validity stays where the acquisition put it.
    for (const run_policy policy : {run_policy::term, run_policy::kill}) {
        for (const long long before : term_befores) {
            for (const long long after : kill_afters) {
                for (long long valid = 1; valid <= 200; valid += 7) {
                    for (long long lost_at = -1; lost_at <= valid; lost_at += 5) {
                        const long long lead = redlock::cli::default_kill_lead(ms{before}).count();
                        CAPTURE(before);
                        CAPTURE(after);
                        CAPTURE(valid);
                        CAPTURE(lost_at);
                        const run_timeline_settings s{policy, ms{before}, ms{after}, ms{lead}};
                        run_timeline_input in{at(0), at(valid), false, std::nullopt, false};
                        std::optional<long long> term_time;
                        std::optional<long long> kill_time;
                        // The shell wakes at `next`, or earlier when the lock is reported
                        // lost (the callback's wake-up).
                        for (int turns = 0; turns < 10 && !kill_time; ++turns) {
                            const long long now = (in.now - origin) / ms{1};
                            in.lost = lost_at >= 0 && now >= lost_at;
                            const run_timeline_step step = decide_run_signal(s, in);
                            if (step.term) {
                                term_time = now;
                                in.term_sent = in.now;
                            }
                            if (step.kill) {
                                kill_time = now;
                                in.kill_sent = true;
                                break;
                            }
                            REQUIRE(step.next.has_value());
                            time_point wake = *step.next;
                            if (!in.lost && lost_at > now) wake = std::min(wake, at(lost_at));
                            in.now = wake;
                        }
                        REQUIRE(kill_time.has_value());
                        CHECK(*kill_time <= std::max(0LL, valid - lead));
                        if (policy == run_policy::term && !term_time) {
                            // Only when SIGKILL came first: the validity ended at once.
                            CHECK(*kill_time >= valid - before);
                        }
                        if (term_time) {
                            CHECK(*term_time <= std::max(0LL, valid - before));
                            CHECK(*kill_time <= *term_time + after);
                        }
                    }
                }
            }
        }
    }
}

TEST_CASE(
    "run timeline: the ignore policy never signals, and the default leads are a quarter of "
    "the TTL and a quarter of that") {
    const run_timeline_settings s{run_policy::ignore, ms{10}, ms{10}};
    const run_timeline_step step =
        decide_run_signal(s, {at(100), at(0), true, std::nullopt, false});
    CHECK_FALSE(step.term);
    CHECK_FALSE(step.kill);
    CHECK_FALSE(step.next.has_value());
    CHECK(redlock::cli::default_term_before(ms{30000}) == ms{7500});
    CHECK(redlock::cli::default_kill_lead(ms{7500}) == ms{1875});
}
