#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

TEST_SUITE("multi-resource") {
    TEST_CASE_FIXTURE(cluster,
                      "one lock over three resources sets every key on every node, and release "
                      "deletes them all") {
        auto locks = make_client();

        auto held = locks.acquire_all({"a", "b", "c"});

        REQUIRE(held);
        CHECK(held->valid());
        CHECK(held->resource() == "a");
        CHECK(held->resources() == std::vector<std::string>{"a", "b", "c"});
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s), [&] {
            return count_holding(key_of("a"), held->value()) == 5 &&
                   count_holding(key_of("b"), held->value()) == 5 &&
                   count_holding(key_of("c"), held->value()) == 5;
        }));
        for (const auto& server : *this) {
            for (const char* resource : {"a", "b", "c"}) {
                auto ttl = server.pttl(key_of(resource));
                CHECK(ttl > 0);
                CHECK(ttl <= 2000);
            }
        }

        auto released = locks.release(*held);

        REQUIRE(released);
        CHECK(released->deleted + released->pending == 5);  // a slow node may be pending
        CHECK_FALSE(held->valid());
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return total_keys() == 0; }));
    }

    TEST_CASE_FIXTURE(cluster,
                      "a lock over overlapping resources is contended and leaves no key of its "
                      "own") {
        auto owner = make_client();
        auto rival = make_client();
        auto held = owner.acquire_all({"a", "b"});
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s), [&] {
            return count_holding(key_of("a"), held->value()) == 5 &&
                   count_holding(key_of("b"), held->value()) == 5;
        }));
        redlock::lock_options two_attempts;
        two_attempts.attempts = 2;

        auto refused = rival.acquire_all({"b", "c"}, two_attempts);

        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::contended);
        CHECK(refused.error().attempts == 2);
        // Released on every node before the call completed: no waiting here.
        CHECK(count_holding(key_of("c")) == 0);
        CHECK(count_holding(key_of("a"), held->value()) == 5);
        CHECK(count_holding(key_of("b"), held->value()) == 5);
        CHECK(held->valid());
    }

    TEST_CASE_FIXTURE(cluster, "two clients racing for overlapping sets never hold both at once") {
        constexpr int rounds = 50;
        std::atomic<int> inside{0};
        std::atomic<int> overlaps{0};
        std::atomic<int> invalid_inside{0};
        std::atomic<int> granted{0};
        std::atomic<int> failed{0};
        std::atomic<int> release_failed{0};
        auto first = make_client();
        auto second = make_client();
        std::latch ready{2};
        auto contend = [&](redlock::client& locks, std::vector<std::string> resources) {
            redlock::lock_options patient;
            patient.max_wait = 30s;
            ready.arrive_and_wait();
            for (int i = 0; i < rounds; ++i) {
                auto held = locks.acquire_all(resources, patient);
                if (!held) {
                    ++failed;
                    continue;
                }
                ++granted;
                if (inside.fetch_add(1) != 0) ++overlaps;
                if (!held->valid()) ++invalid_inside;
                std::this_thread::yield();  // hold it briefly
                if (!held->valid()) ++invalid_inside;
                inside.fetch_sub(1);
                if (!locks.release(*held)) ++release_failed;
            }
        };

        {
            std::jthread left{contend, std::ref(first), std::vector<std::string>{"a", "b"}};
            std::jthread right{contend, std::ref(second), std::vector<std::string>{"b", "c"}};
        }

        CHECK(overlaps == 0);
        CHECK(invalid_inside == 0);
        CHECK(failed == 0);
        CHECK(granted == 2 * rounds);
        CHECK(release_failed == 0);
        CHECK(total_keys() == 0);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a node grants all of a set or none of it: a foreign key on a majority "
                      "leaves no other key behind") {
        auto locks = make_client();
        for (int i : {0, 1, 2}) {
            REQUIRE(node(i).command({"SET", key_of("b"), "foreign", "PX", "60000"}) == "OK");
        }

        auto held = locks.acquire_all({"a", "b"});

        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::contended);
        CHECK(count_holding(key_of("a")) == 0);
        CHECK(count_holding(key_of("b"), "foreign") == 3);
        CHECK(count_holding(key_of("b")) == 3);
        CHECK(total_keys() == 3);
    }
}
