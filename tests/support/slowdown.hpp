#pragma once

// How much slower than a plain build the tests may run here: ONE factor for every timing
// bound of the integration and CLI tests (issue 37, item 3).
//
// A bound in a test is what an idle plain build needs, with a wide margin; scaled() stretches
// it by slowdown() for the builds and machines that run slower. slowdown() is
//   - REDLOCK_TEST_SLOWDOWN from the environment when set: a positive number ("3", "2.5");
//     anything else throws std::invalid_argument naming the variable and the value, which
//     fails every case that asks (loudly, rather than running with a factor nobody chose);
//   - otherwise the build's own: 5 under ThreadSanitizer (everything runs 5-15 times slower),
//     3 under AddressSanitizer (with or without UBSan), 1 on a plain build.
//
// What to scale: the fixtures' connect and request timeouts, "within N ms" checks, the
// bounds of wait_until and countdown::wait_for (support/wait.hpp takes them as given: pass
// scaled(...) there). What not to: a TTL, a latency a test injects to outlast a timeout (scale
// it with the timeout, or not at all), or any bound whose stretching would stop the test from
// testing what it asserts (that a lock expires within its TTL plus drift: keep the TTL, scale
// only the slack). A "nothing happens for N ms" period (holds_for) is left as it is: a longer
// one only asserts more, and may overrun the TTL it must stay within.

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace redlock_test {

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define REDLOCK_TEST_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define REDLOCK_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define REDLOCK_TEST_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define REDLOCK_TEST_ASAN 1
#endif

/// The factor this build gets when REDLOCK_TEST_SLOWDOWN is not set.
#if defined(REDLOCK_TEST_TSAN)
inline constexpr double built_slowdown = 5;
#elif defined(REDLOCK_TEST_ASAN)
inline constexpr double built_slowdown = 3;
#else
inline constexpr double built_slowdown = 1;
#endif

/// REDLOCK_TEST_SLOWDOWN's value, parsed; throws std::invalid_argument (naming the variable
/// and the value) unless it is a positive, finite number.
[[nodiscard]] inline auto parse_slowdown(const std::string& text) -> double {
    const auto refuse = [&]() -> double {
        throw std::invalid_argument("REDLOCK_TEST_SLOWDOWN=\"" + text +
                                    "\": not a positive number (the tests' slowdown factor, "
                                    "e.g. 3; unset it for this build's own, " +
                                    std::to_string(static_cast<int>(built_slowdown)) + ")");
    };
    // strtod would skip leading blanks and take a sign: neither belongs in a factor.
    if (text.empty() ||
        !(std::isdigit(static_cast<unsigned char>(text.front())) != 0 || text.front() == '.')) {
        return refuse();
    }
    char* end = nullptr;
    const double factor = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(factor) || factor <= 0) {
        return refuse();
    }
    return factor;
}

/// The tests' slowdown factor (see the top of this file). Read once; when the variable is
/// invalid, every call throws.
[[nodiscard]] inline auto slowdown() -> double {
    static const double factor = [] {
        const char* text = std::getenv("REDLOCK_TEST_SLOWDOWN");
        return text == nullptr ? built_slowdown : parse_slowdown(text);
    }();
    return factor;
}

/// `bound` (what an idle plain build needs, with its margin) times slowdown(), rounded up to
/// whole milliseconds.
template <class Rep, class Period>
[[nodiscard]] auto scaled(std::chrono::duration<Rep, Period> bound) -> std::chrono::milliseconds {
    const std::chrono::duration<double, std::milli> stretched = bound * slowdown();
    return std::chrono::milliseconds{
        static_cast<std::chrono::milliseconds::rep>(std::ceil(stretched.count()))};
}

/// scaled(bound), but never beyond `limit`: for a slack that may stretch only so far before
/// the check stops telling the behaviour tested from the one it rules out (a wake-up by the
/// release notification from one by a re-check seconds later, say).
template <class Rep, class Period>
[[nodiscard]] auto scaled_within(std::chrono::duration<Rep, Period> bound,
                                 std::chrono::milliseconds limit) -> std::chrono::milliseconds {
    const auto stretched = scaled(bound);
    return stretched < limit ? stretched : limit;
}

}  // namespace redlock_test
