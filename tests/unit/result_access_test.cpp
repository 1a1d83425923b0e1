// redlock::result on an error (issue 27, item 11): value() throws bad_result_access,
// which carries the library's error and says what it was; `*r` and `r->` assert in a
// debug build (a child process is made to try, and must die by SIGABRT), where before
// they read a variant's other alternative and crashed later, far from the mistake.
#include <doctest/doctest.h>
#include <redlock/result.hpp>

#include <csignal>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

auto failed() -> redlock::result<std::string> {
    return redlock::failure{redlock::error{redlock::make_error_code(redlock::errc::contended),
                                           "resource 'x' is held by someone",
                                           {},
                                           1}};
}

/// How a child that runs `fn` ends: the signal that killed it, or 0.
template <class F>
auto death_signal(F fn) -> int {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        fn();
        std::_Exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

}  // namespace

TEST_SUITE("result access") {
    TEST_CASE("value() of an error throws bad_result_access with the library's message") {
        auto r = failed();
        bool caught = false;
        try {
            (void)r.value();
        } catch (const redlock::bad_result_access<redlock::error>& e) {
            caught = true;
            CHECK(std::string{e.what()} ==
                  "redlock: value() of a result that holds an error: resource 'x' is held by "
                  "someone");
            CHECK(e.error().code == redlock::errc::contended);
        }
        CHECK(caught);
        const auto& c = r;
        CHECK_THROWS_AS((void)c.value(), redlock::bad_result_access<redlock::error>);
        CHECK_THROWS_AS((void)failed().value(), redlock::bad_result_access<redlock::error>);
        // A value is handed out as before.
        redlock::result<std::string> ok{std::string{"v"}};
        CHECK(ok.value() == "v");
        CHECK(*ok == "v");
        CHECK(ok->size() == 1);
    }

#ifndef NDEBUG
    TEST_CASE("operator* and operator-> of an error stop a debug build at the mistake") {
        CHECK(death_signal([] {
                  auto r = failed();
                  const std::string copy = *r;
                  (void)copy;
              }) == SIGABRT);
        CHECK(death_signal([] {
                  auto r = failed();
                  (void)r->size();
              }) == SIGABRT);
        CHECK(death_signal([] {
                  redlock::result<std::string> ok{std::string{"v"}};
                  (void)*ok;
              }) == 0);
    }
#endif
}
