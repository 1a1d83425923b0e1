// The tests' slowdown factor (tests/support/slowdown.hpp): REDLOCK_TEST_SLOWDOWN is read as a
// positive number or refused by name; scaled() stretches a bound by the factor.

#include "../support/slowdown.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

using namespace std::chrono_literals;
using redlock_test::parse_slowdown;

TEST_CASE("REDLOCK_TEST_SLOWDOWN is read as a positive number") {
    CHECK(parse_slowdown("3") == 3);
    CHECK(parse_slowdown("2.5") == 2.5);
    CHECK(parse_slowdown("0.5") == 0.5);
}

TEST_CASE("an invalid REDLOCK_TEST_SLOWDOWN is refused naming the variable and the value") {
    for (const std::string text : {"", "0", "-1", "abc", "3x", " 3", "+3", "inf", "nan", "1e999"}) {
        CAPTURE(text);
        std::string message;
        try {
            (void)parse_slowdown(text);
        } catch (const std::invalid_argument& e) {
            message = e.what();
        }
        CHECK(message.find("REDLOCK_TEST_SLOWDOWN=\"" + text + "\"") != std::string::npos);
    }
}

TEST_CASE("scaled stretches a bound by the slowdown factor, rounded up to whole milliseconds") {
    const double factor = redlock_test::slowdown();
    REQUIRE(factor > 0);
    CHECK(redlock_test::scaled(0ms) == 0ms);
    CHECK(redlock_test::scaled(1s).count() == static_cast<long long>(std::ceil(1000 * factor)));
    CHECK(redlock_test::scaled(50ms) >= 50ms * factor);
    CHECK(redlock_test::scaled(50ms) < 50ms * factor + 1ms);
}

TEST_CASE("scaled_within stretches a bound no further than its limit") {
    CHECK(redlock_test::scaled_within(100ms, 100ms) == 100ms);
    CHECK(redlock_test::scaled_within(100ms, 10s) == redlock_test::scaled(100ms));
    CHECK(redlock_test::scaled_within(10s, 1ms) == 1ms);
}
