// Lock-delay (issue 26, item 4): the nodes keep a lock TTL + lock_delay, renewals keep the
// delay on top, the holder's validity counts from the TTL alone, and a clean release
// still frees the resource at once. Real servers.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;
using std::chrono::steady_clock;

namespace {

auto delayed(std::chrono::milliseconds ttl, std::chrono::milliseconds delay)
    -> redlock::lock_options {
    redlock::lock_options o;
    o.attempts = 1;
    o.ttl = ttl;
    o.lock_delay = delay;
    return o;
}

/// No lock delay, one attempt: a rival's acquisition. (Not one_attempt(): holder_test.cpp has
/// one, and the two files can share a unity batch.)
auto undelayed_attempt() -> redlock::lock_options {
    redlock::lock_options o;
    o.attempts = 1;
    return o;
}

}  // namespace

TEST_SUITE("lock-delay") {
    TEST_CASE_FIXTURE(cluster, "the nodes keep TTL + delay, and the validity counts the TTL only") {
        auto locks = make_client();
        const auto held = locks.acquire("d:ttl", delayed(1000ms, 3000ms));
        REQUIRE(held);
        CHECK(held->remaining() <= 1000ms);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return count_holding(key_of("d:ttl"), held->value()) == 5;
        }));
        for (const auto& s : *this) {
            const long long left = s.pttl(key_of("d:ttl"));
            CHECK(left > 3000);
            CHECK(left <= 4000);
        }
        // An extend keeps the delay on top and reports the TTL's validity.
        const auto extended = locks.extend(*held, 1000ms);
        REQUIRE(extended);
        CHECK(*extended <= 1000ms);
        CHECK(held->remaining() <= 1000ms);
        for (const auto& s : *this) CHECK(s.pttl(key_of("d:ttl")) > 3000);
    }

    TEST_CASE_FIXTURE(cluster, "a clean release frees the resource at once") {
        auto locks = make_client();
        const auto held = locks.acquire("d:release", delayed(1000ms, 5000ms));
        REQUIRE(held);
        const auto report = locks.release(*held);
        REQUIRE(report);
        CHECK(report->majority());
        const auto rival = make_client().acquire("d:release", undelayed_attempt());
        CHECK(rival);
    }

    TEST_CASE_FIXTURE(cluster,
                      "an abandoned lock blocks the resource for its delay past the holder's "
                      "validity") {
        auto locks = make_client();
        const auto started = steady_clock::now();
        const auto held = locks.acquire("d:abandoned", delayed(500ms, 1500ms));
        REQUIRE(held);
        // The holder stops renewing (it crashed, or was cut off): nothing releases it.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] { return !held->valid(); }));
        auto rival = make_client();
        const auto refused = rival.acquire("d:abandoned", undelayed_attempt());
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::contended);

        redlock::lock_options wait;
        wait.max_wait = 10s;
        const auto granted = rival.acquire("d:abandoned", wait);
        REQUIRE(granted);
        const auto took = steady_clock::now() - started;
        CAPTURE(std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
        CHECK(took >= 1900ms);  // 500 + 1500, less the nodes' clock granularity
    }

    TEST_CASE_FIXTURE(cluster, "readers and permits keep the delay too") {
        auto locks = make_client();
        auto reader = delayed(1000ms, 3000ms);
        reader.shared = true;
        const auto r = locks.acquire("d:rw", reader);
        REQUIRE(r);
        CHECK(r->remaining() <= 1000ms);
        auto permit = delayed(1000ms, 3000ms);
        permit.permits = 2;
        const auto p = locks.acquire("d:sem", permit);
        REQUIRE(p);
        CHECK(p->remaining() <= 1000ms);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return node(4).pttl(key_of("d:sem") + "|permit|" + std::to_string(*p->permit())) > 3000;
        }));
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s),
                                       [&] { return node(0).pttl(key_of("d:rw")) > 3000; }));
        const auto extended = locks.extend(*r, 1000ms);
        REQUIRE(extended);
        CHECK(*extended <= 1000ms);
        const auto extended_permit = locks.extend(*p, 1000ms);
        REQUIRE(extended_permit);
        CHECK(*extended_permit <= 1000ms);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a negative delay, or one whose sum with the TTL overflows, is refused") {
        auto locks = make_client();
        const auto negative = locks.acquire("d:bad", delayed(1000ms, -1ms));
        REQUIRE_FALSE(negative);
        CHECK(negative.error().code == redlock::errc::invalid_argument);
        CHECK(negative.error().message == "lock_delay must not be negative");
        const auto overflow = locks.acquire("d:bad", delayed(2'000'000'000ms, 200'000'000ms));
        REQUIRE_FALSE(overflow);
        CHECK(overflow.error().message.find("ttl + lock_delay") != std::string::npos);

        auto settings = config();
        settings.lock.lock_delay = -5ms;
        const auto made = redlock::client::create(settings);
        REQUIRE_FALSE(made);
        CHECK(made.error().message.find("/lock/lock_delay_ms") != std::string::npos);
    }
}
