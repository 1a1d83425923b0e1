#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <optional>
#include <utility>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// Long enough that a key gone within the test's bounds was released, not expired.
auto long_ttl() -> redlock::lock_options {
    redlock::lock_options options;
    options.ttl = 10s;
    return options;
}

}  // namespace

TEST_SUITE("guard") {
    TEST_CASE_FIXTURE(cluster, "a guard releases its lock when it goes out of scope") {
        auto locks = make_client();
        auto key = key_of("orders:42");
        auto held = locks.acquire("orders:42", long_ttl());
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key) == 5; }));

        {
            redlock::guard scoped{locks, *held};
            CHECK(scoped.valid());
        }

        // The destructor only queues the release: wait for the servers to see it.
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s),
                                       [&] { return count_holding(key) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "guard::release returns the report and leaves the guard empty") {
        auto locks = make_client();
        auto held = locks.acquire("orders:42", long_ttl());
        REQUIRE(held);
        redlock::guard scoped{locks, *held};

        auto report = scoped.release();

        REQUIRE(report);
        CHECK(report->deleted + report->pending == 5);  // a slow node may be pending
        CHECK(report->majority());
        CHECK_FALSE(scoped.valid());
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key_of("orders:42")) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "a moved-from guard does not release the lock a second time") {
        auto locks = make_client();
        auto key = key_of("orders:42");
        auto held = locks.acquire("orders:42", long_ttl());
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key) == 5; }));
        std::optional<redlock::guard> source{std::in_place, locks, *held};

        redlock::guard target{std::move(*source)};
        source.reset();

        CHECK(target.valid());
        CHECK(target.get().value() == held->value());
        CHECK(
            redlock_test::holds_for(300ms, [&] { return count_holding(key, held->value()) == 5; }));
        auto report = target.release();
        REQUIRE(report);
        CHECK(report->deleted + report->pending == 5);  // 0 had the moved-from guard released it
    }

    TEST_CASE_FIXTURE(cluster, "move-assigning over a guard releases the lock it held") {
        auto locks = make_client();
        auto first = locks.acquire("orders:1", long_ttl());
        auto second = locks.acquire("orders:2", long_ttl());
        REQUIRE(first);
        REQUIRE(second);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key_of("orders:2")) == 5; }));
        redlock::guard keeper{locks, *first};
        redlock::guard other{locks, *second};

        keeper = std::move(other);

        CHECK(keeper.get().value() == second->value());
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s),
                                       [&] { return count_holding(key_of("orders:1")) == 0; }));
        CHECK(count_holding(key_of("orders:2"), second->value()) == 5);
    }

    TEST_CASE_FIXTURE(cluster, "a guard may outlive its client") {
        std::optional<redlock::guard> survivor;
        auto key = key_of("orders:42");
        {
            auto locks = make_client();
            auto held = locks.acquire("orders:42", long_ttl());
            REQUIRE(held);
            survivor.emplace(locks, *held);
        }

        survivor.reset();

        // Nothing released it: the key stays until it expires on the servers.
        CHECK(count_holding(key) >= 3);
    }
}
