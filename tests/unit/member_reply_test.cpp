// decide_member_reply, enumerated: every kind of answer a cluster or Sentinel
// member's node can give, for a command or its WAIT, held or not, replicated or
// not, after any number of redirections. Each case is checked against the rules
// stated in sansio/member_reply.hpp.

#include "sansio/member_reply.hpp"

#include "canned_reply.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace redlock::detail;
using redlock_test::canned_reply;

TEST_CASE("what a member does with each answer, every case") {
    struct answer {
        const char* name;
        canned_reply reply;
        bool redirect;
        bool moved;
        bool calls_refresh;
        bool is_error;
        bool transport;  ///< no reply at all (not stopped)
    };
    const std::vector<answer> answers{
        {"ok", canned_reply::integer(1), false, false, false, false, false},
        {"status", canned_reply::status("OK"), false, false, false, false, false},
        {"nil", canned_reply::nil(), false, false, false, false, false},
        {"error", canned_reply::error("ERR x"), false, false, false, true, false},
        {"noscript", canned_reply::noscript(), false, false, false, true, false},
        {"moved", canned_reply::error("MOVED 12 127.0.0.1:7002"), true, true, true, true, false},
        {"ask", canned_reply::error("ASK 12 127.0.0.1:7002"), true, false, false, true, false},
        {"bad moved", canned_reply::error("MOVED x y"), false, false, false, true, false},
        {"clusterdown", canned_reply::error("CLUSTERDOWN down"), false, false, true, true, false},
        {"tryagain", canned_reply::error("TRYAGAIN later"), false, false, true, true, false},
        {"readonly", canned_reply::error("READONLY replica"), false, false, true, true, false},
        {"timeout", canned_reply::timeout(), false, false, true, false, true},
        {"unreachable", canned_reply::failed(request_status::unreachable, "down"), false, false,
         true, false, true},
        {"stopped", canned_reply::failed(request_status::stopped, "bye"), false, false, false,
         false, false},
    };
    int cases = 0;
    for (const answer& ans : answers) {
        for (const bool wait_answer : {false, true}) {
            for (const bool holding : {false, true}) {
                for (const bool replicated : {false, true}) {
                    for (std::uint8_t redirects = 0; redirects <= max_redirects + 1; ++redirects) {
                        CAPTURE(ans.name);
                        CAPTURE(wait_answer);
                        CAPTURE(holding);
                        CAPTURE(replicated);
                        CAPTURE(int{redirects});
                        const auto a = decide_member_reply(
                            ans.reply.event(), {wait_answer, holding, replicated, redirects});
                        ++cases;
                        if (wait_answer) {
                            // WAIT's answer only ever judges a held answer.
                            CHECK(a.step ==
                                  (holding ? member_step::judge_held : member_step::drop));
                            CHECK_FALSE(a.refresh);
                            continue;
                        }
                        const bool stopped = ans.reply.event().status == request_status::stopped;
                        CHECK(a.refresh == (ans.calls_refresh && !stopped));
                        if (ans.redirect) {
                            const bool follows = redirects < max_redirects;
                            CHECK(a.step == (follows ? member_step::follow : member_step::forward));
                            CHECK(a.to.has_value() == follows);
                            if (follows) {
                                CHECK(a.to->port == 7002);
                                CHECK((a.to->how == redirection::kind::moved) == ans.moved);
                            }
                            continue;
                        }
                        CHECK_FALSE(a.to);
                        // A write's good answer waits for WAIT's; anything else goes on at once.
                        const bool held = replicated && !ans.is_error && !ans.transport && !stopped;
                        CHECK(a.step == (held ? member_step::hold : member_step::forward));
                    }
                }
            }
        }
    }
    CHECK(cases == 14 * 2 * 2 * 2 * (max_redirects + 2));
}
