// Lock options at the edge of their type: durations that the caller may well mean as
// "forever". lock_options takes std::chrono::milliseconds, checked only for > 0 (or >= 0),
// while the library adds them to steady_clock::now(), whose nanoseconds overflow at about
// 292 years (2^63 ns).
//
// Both were library bugs (found by these tests): the wait deadline now saturates, and a
// TTL above 2^31-1 ms (the config's cap) is an invalid argument.

#include "support/cluster.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <thread>

using namespace std::chrono_literals;
using redlock_test::cluster;

TEST_SUITE("extreme options") {
    // lib/operations/acquire_op.cpp, acquire_op::acquire_op: wait_deadline_ = steady_clock::now() +
    // *options_.max_wait. milliseconds::max() converted to nanoseconds overflows (signed, UB);
    // in practice it wraps to -1 ms, the deadline is already past, and the acquisition gives
    // up after its first attempt instead of waiting.
    TEST_CASE_FIXTURE(cluster,
                      "a max_wait of milliseconds::max() waits for a lock held for a moment") {
        auto locks = make_client();
        redlock::lock_options brief;
        brief.ttl = 300ms;
        auto rival = locks.acquire("orders:42", brief);
        REQUIRE(rival);
        redlock::lock_options forever;
        forever.max_wait = std::chrono::milliseconds::max();

        auto held = locks.acquire("orders:42", forever);

        CHECK_MESSAGE(held, (held ? "" : held.error().message));
    }

    // lib/operations/acquire_op.cpp, acquire_op::finish_success: set_valid_until(decided_at +
    // validity). A TTL of 10^13 ms (about 317 years) passes check_arguments (> 0) and Redis
    // (PX up to LLONG_MAX - now), and validity * 10^6 ns overflows (signed, UB); in practice
    // the deadline wraps into the past and the lock handed out is not valid(). Expected once
    // fixed: invalid_argument (validate_config caps a configured TTL at 2^31-1 ms), or a
    // deadline that saturates instead of wrapping.
    TEST_CASE_FIXTURE(cluster,
                      "a TTL of three centuries is refused as invalid, or held and valid") {
        auto locks = make_client();
        redlock::lock_options centuries;
        centuries.ttl = std::chrono::milliseconds{10'000'000'000'000};

        auto held = locks.acquire("orders:42", centuries);

        if (!held) {
            CHECK(held.error().code == redlock::errc::invalid_argument);
            return;
        }
        CHECK(held->valid());
        CHECK(held->remaining() > std::chrono::hours{24 * 365});
        CHECK(locks.release(*held));
    }
}

TEST_SUITE("extreme options") {
    // An extend's deadline is computed like an acquisition's: a TTL of 10^13 ms would
    // overflow steady_clock's nanoseconds and wrap into the past, so it is refused.
    TEST_CASE_FIXTURE(cluster, "an extend by three centuries is refused and the lock stays valid") {
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);

        auto extended = locks.extend(*held, std::chrono::milliseconds{10'000'000'000'000});

        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::invalid_argument);
        CHECK(extended.error().message.find("2147483647") != std::string::npos);
        CHECK(held->valid());
        CHECK(locks.release(*held));
    }
}
