#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <thread>
#include <utility>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

auto count_status(const redlock::error& failed, redlock::node_status status) -> std::ptrdiff_t {
    return std::ranges::count_if(failed.nodes,
                                 [&](const redlock::node_report& r) { return r.status == status; });
}

}  // namespace

TEST_SUITE("extend") {
    TEST_CASE_FIXTURE(cluster, "repeated extends keep a lock alive well past its original TTL") {
        auto locks = make_client();
        auto key = key_of("orders:42");
        redlock::lock_options short_ttl;
        short_ttl.ttl = 500ms;
        auto held = locks.acquire("orders:42", short_ttl);
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key, held->value()) == 5; }));
        auto start = std::chrono::steady_clock::now();
        int extends = 0;
        int invalid_before_extend = 0;
        int missing_before_extend = 0;

        // Pacing with sleep_for is the point here: time must pass for the TTL to matter.
        while (std::chrono::steady_clock::now() - start < 2000ms) {
            std::this_thread::sleep_for(200ms);
            if (!held->valid()) ++invalid_before_extend;
            if (count_holding(key, held->value()) != 5) ++missing_before_extend;
            auto extended = locks.extend(*held, 500ms);
            REQUIRE(extended);
            ++extends;
        }

        // Four times the original TTL has passed: without the extends the key would be gone.
        CHECK(std::chrono::steady_clock::now() - start >= 2000ms);
        CHECK(extends >= 8);
        CHECK(invalid_before_extend == 0);
        CHECK(missing_before_extend == 0);
        CHECK(held->valid());
        CHECK(count_holding(key, held->value()) == 5);
        for (const auto& server : *this) {
            auto ttl = server.pttl(key);
            CHECK(ttl > 0);
            CHECK(ttl <= 500);
        }
    }

    TEST_CASE_FIXTURE(cluster, "extend returns the new validity and moves the deadline forward") {
        auto locks = make_client();
        auto key = key_of("orders:42");
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        auto first_deadline = held->valid_until();
        // Let some of the validity run out, so that a fresh one ends later than the first.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return held->remaining() < 1850ms; }));
        auto before_call = std::chrono::steady_clock::now();

        auto extended = locks.extend(*held, 2000ms);

        auto returned = std::chrono::steady_clock::now();
        REQUIRE(extended);
        CHECK(*extended > 0ms);
        CHECK(*extended <= 2000ms);
        CHECK(held->valid());
        CHECK(held->valid_until() > first_deadline);
        // Counted from the extend's own start, which lies between these two instants.
        CHECK(held->valid_until() <= returned + 2000ms);
        CHECK(held->valid_until() >= before_call + *extended);
        // The TTL on the nodes was refreshed too (stragglers may still be answering).
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s), [&] {
            return std::ranges::all_of(*this, [&](const redlock_test::redis_server& server) {
                return server.pttl(key) > 1850;
            });
        }));
    }

    TEST_CASE_FIXTURE(cluster,
                      "extend_async delivers the new validity to its callback exactly once") {
        std::atomic<int> calls{0};
        std::optional<redlock::result<std::chrono::milliseconds>> outcome;
        redlock_test::countdown delivered{1};
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);

        locks.extend_async(*held, 3000ms, [&](redlock::result<std::chrono::milliseconds> r) {
            outcome.emplace(std::move(r));
            ++calls;
            delivered.count_down();
        });

        REQUIRE(delivered.wait_for(redlock_test::scaled(5s)));
        CHECK(redlock_test::holds_for(200ms, [&] { return calls == 1; }));
        REQUIRE(*outcome);
        CHECK(**outcome > 2000ms);
        CHECK(**outcome <= 3000ms);
        CHECK(held->remaining() > 2000ms);
    }

    TEST_CASE_FIXTURE(cluster,
                      "extending with a foreign value on every node fails and changes nothing") {
        auto locks = make_client();
        auto key = key_of("orders:42");
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key, held->value()) == 5; }));
        for (auto& server : *this) {
            REQUIRE(server.command({"SET", key, "other", "PX", "60000"}) == "OK");
        }
        auto deadline = held->valid_until();

        auto extended = locks.extend(*held, 2000ms);

        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::not_held);
        CHECK_FALSE(extended.error().message.empty());
        CHECK(extended.error().nodes.size() == 5);
        CHECK(count_status(extended.error(), redlock::node_status::refused) >= 3);
        CHECK(count_status(extended.error(), redlock::node_status::ok) == 0);
        CHECK(count_holding(key, "other") == 5);
        for (const auto& server : *this) {
            auto ttl = server.pttl(key);
            CHECK(ttl > 55000);
            CHECK(ttl <= 60000);
        }
        // A failed extend never shortens what was held.
        CHECK(held->valid_until() == deadline);
        CHECK(held->valid());
    }

    TEST_CASE_FIXTURE(cluster,
                      "an extend that cannot reach a majority fails and keeps the old deadline") {
        auto locks = make_client();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        auto deadline = held->valid_until();
        for (int i : {0, 1, 2}) node(i).freeze();

        auto extended = locks.extend(*held, 2000ms);

        for (int i : {0, 1, 2}) node(i).thaw();
        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::quorum_unreachable);
        CHECK(count_status(extended.error(), redlock::node_status::timeout) == 3);
        CHECK(count_status(extended.error(), redlock::node_status::ok) == 2);
        CHECK(held->valid_until() == deadline);
        CHECK(held->valid());
    }

    TEST_CASE_FIXTURE(cluster, "extending a released lock is not_held and sends nothing") {
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        REQUIRE(locks.release(*held));
        auto requests = locks.stats().requests;

        auto extended = locks.extend(*held, 2000ms);

        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::not_held);
        CHECK(locks.stats().requests == requests);
        CHECK(count_holding(key_of("orders:42")) == 0);
    }

    TEST_CASE_FIXTURE(cluster, "extending an expired lock is not_held and sends nothing") {
        auto locks = make_client();
        redlock::lock_options short_ttl;
        short_ttl.ttl = 100ms;
        auto held = locks.acquire("orders:42", short_ttl);
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] { return !held->valid(); }));
        auto requests = locks.stats().requests;

        auto extended = locks.extend(*held, 2000ms);

        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::not_held);
        CHECK(locks.stats().requests == requests);
    }

    TEST_CASE_FIXTURE(cluster, "extending with a TTL of zero is an invalid argument") {
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        auto deadline = held->valid_until();
        auto requests = locks.stats().requests;

        auto extended = locks.extend(*held, 0ms);

        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::invalid_argument);
        CHECK(locks.stats().requests == requests);
        CHECK(held->valid_until() == deadline);
        CHECK(held->valid());
    }

    TEST_CASE_FIXTURE(cluster, "extending an empty lock handle is an invalid argument") {
        auto locks = make_client();

        auto extended = locks.extend(redlock::lock{}, 2000ms);

        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::invalid_argument);
        CHECK(locks.stats().requests == 0);
    }

    TEST_CASE_FIXTURE(cluster, "extending a lock over several resources refreshes every key") {
        auto locks = make_client();
        redlock::lock_options short_ttl;
        short_ttl.ttl = 1000ms;
        auto held = locks.acquire_all({"a", "b", "c"}, short_ttl);
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s), [&] {
            return count_holding(key_of("a"), held->value()) == 5 &&
                   count_holding(key_of("b"), held->value()) == 5 &&
                   count_holding(key_of("c"), held->value()) == 5;
        }));

        auto extended = locks.extend(*held, 5000ms);

        REQUIRE(extended);
        CHECK(*extended > 1000ms);
        CHECK(*extended <= 5000ms);
        auto all_refreshed = [&] {
            for (const auto& server : *this) {
                for (const char* resource : {"a", "b", "c"}) {
                    if (server.pttl(key_of(resource)) <= 1000) return false;
                }
            }
            return true;
        };
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s), all_refreshed));
        for (const char* resource : {"a", "b", "c"}) {
            CHECK(count_holding(key_of(resource), held->value()) == 5);
        }
    }
}
