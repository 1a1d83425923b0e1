// Printing errors: `os << x` and to_string(x) give the same text for every
// error type the library returns (errc, node_status, error, config_error), so
// a caller needs neither a cast nor to know which member holds the text.

#include <doctest/doctest.h>
#include <redlock/config.hpp>
#include <redlock/error.hpp>

#include <sstream>
#include <string>
#include <system_error>

namespace {

template <typename T>
auto streamed(const T& value) -> std::string {
    std::ostringstream out;
    out << value;
    return out.str();
}

}  // namespace

TEST_CASE("an errc prints its enumerator name, as to_string does") {
    CHECK(streamed(redlock::errc::contended) == "contended");
    CHECK(streamed(redlock::errc::lock_lost) == "lock_lost");
    CHECK(streamed(redlock::errc::quorum_unreachable) ==
          std::string{to_string(redlock::errc::quorum_unreachable)});
    // A value from a newer library version still prints something.
    CHECK(streamed(static_cast<redlock::errc>(999)) == "unknown");
}

TEST_CASE("a node_status prints its name, as to_string does") {
    CHECK(streamed(redlock::node_status::ok) == "ok");
    CHECK(streamed(redlock::node_status::pending) == "pending");
    CHECK(streamed(redlock::node_status::timeout) ==
          std::string{to_string(redlock::node_status::timeout)});
}

TEST_CASE("an error prints its code's name and its message") {
    const redlock::error e{redlock::errc::contended, "lock \"orders\" is held elsewhere", {}, 3};
    CHECK(to_string(e) == "contended: lock \"orders\" is held elsewhere");
    CHECK(streamed(e) == to_string(e));
    // The message names the resource and the nodes; the code is not repeated
    // in it, so printing never needs a cast to find the name.
}

TEST_CASE("an error without a message falls back to the code's text") {
    const redlock::error e{redlock::errc::client_stopped, "", {}, 0};
    CHECK(to_string(e) == "client_stopped: the client has been shut down");
    CHECK(streamed(e) == to_string(e));
}

TEST_CASE("an error with a code from another category names that category") {
    const redlock::error e{std::make_error_code(std::errc::timed_out), "connect", {}, 0};
    CHECK(to_string(e) ==
          "generic:" + std::to_string(static_cast<int>(std::errc::timed_out)) + ": connect");
    CHECK(streamed(e) == to_string(e));
}

TEST_CASE("a config_error prints what(), as to_string does") {
    const redlock::config_error located{"x.json", "/nodes/1/port", "must be an integer"};
    CHECK(to_string(located) == "x.json: /nodes/1/port: must be an integer");
    CHECK(to_string(located) == located.what());
    CHECK(streamed(located) == located.what());

    const redlock::config_error bare{"", "", "no nodes"};
    CHECK(streamed(bare) == "no nodes");
}

TEST_CASE("an error returned by the library prints the same way") {
    const auto parsed = redlock::parse_config("{", "broken.json");
    REQUIRE_FALSE(parsed);
    CHECK(streamed(parsed.error()) == parsed.error().what());
    CHECK(streamed(parsed.error()).starts_with("broken.json: "));
}
