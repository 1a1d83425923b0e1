// The NOSCRIPT fallback, every case: each form a script call can be sent in,
// against every kind of reply and transport outcome. Only a NOSCRIPT error to
// EVALSHA is resent (as EVAL); everything else is the node's answer.
#include "sansio/script_fallback.hpp"

#include "canned_reply.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace redlock::detail;
using redlock_test::canned_reply;

TEST_SUITE("script fallback") {
    TEST_CASE("only NOSCRIPT to EVALSHA is resent as EVAL, every other outcome is the answer") {
        struct one {
            const char* what;
            canned_reply r;
            bool noscript;
        };
        const one outcomes[] = {
            {"NOSCRIPT error", canned_reply::noscript(), true},
            {"bare NOSCRIPT error", canned_reply::error("NOSCRIPT"), true},
            {"another error", canned_reply::error("ERR unknown command"), false},
            {"an error that only mentions NOSCRIPT",
             canned_reply::error("ERR Error running script: NOSCRIPT"), false},
            {"a status NOSCRIPT", canned_reply::status("NOSCRIPT"), false},
            {"integer 1", canned_reply::integer(1), false},
            {"integer 0", canned_reply::integer(0), false},
            {"integer -1", canned_reply::integer(-1), false},
            {"nil", canned_reply::nil(), false},
            {"timeout", canned_reply::timeout(), false},
            {"unreachable, cause naming NOSCRIPT",
             canned_reply::failed(request_status::unreachable, "NOSCRIPT"), false},
            {"stopped", canned_reply::failed(request_status::stopped, "client stopping"), false},
        };
        for (const script_form form : {script_form::evalsha, script_form::eval}) {
            for (const auto& o : outcomes) {
                INFO(o.what << (form == script_form::eval ? " to EVAL" : " to EVALSHA"));
                const bool resend = form == script_form::evalsha && o.noscript;
                CHECK((after_script_reply(form, o.r.event()) == script_reply::resend_as_eval) ==
                      resend);
            }
        }
    }

    TEST_CASE("a call's form follows its eval flag") {
        CHECK(script_form_of(false) == script_form::evalsha);
        CHECK(script_form_of(true) == script_form::eval);
    }
}
