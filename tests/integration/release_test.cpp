#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <optional>
#include <utility>

using namespace std::chrono_literals;
using redlock_test::cluster;

TEST_SUITE("release") {
    TEST_CASE_FIXTURE(cluster,
                      "releasing deletes the key on every node and invalidates the handle") {
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);

        auto report = locks.release(*held);

        REQUIRE(report);
        CHECK(report->deleted + report->pending == 5);  // a slow node may be pending
        CHECK(report->quorum == 3);
        CHECK(report->majority());
        CHECK(report->nodes.size() == 5);
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key_of("orders:42")) == 0; }));
        CHECK_FALSE(held->valid());
        CHECK(held->remaining() == 0ms);
    }

    TEST_CASE_FIXTURE(cluster,
                      "releasing a stale handle deletes nothing and leaves the new owner's key") {
        auto first = make_client();
        auto second = make_client();
        auto key = key_of("orders:42");
        auto stale = first.acquire("orders:42");
        REQUIRE(stale);
        REQUIRE(first.release(*stale));
        auto current = second.acquire("orders:42");
        REQUIRE(current);
        REQUIRE(redlock_test::wait_until(
            redlock_test::scaled(1s), [&] { return count_holding(key, current->value()) == 5; }));

        auto report = first.release(*stale);

        REQUIRE(report);
        CHECK(report->deleted == 0);
        CHECK_FALSE(report->majority());
        CHECK(count_holding(key, current->value()) == 5);
        CHECK(current->valid());
    }

    TEST_CASE_FIXTURE(cluster,
                      "release falls back from EVALSHA to EVAL after the scripts were flushed") {
        auto locks = make_client();
        auto warm_up = locks.acquire("orders:42");
        REQUIRE(warm_up);
        REQUIRE(locks.release(*warm_up));  // the release script is now loaded everywhere
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key_of("orders:42")) == 5; }));
        for (auto& server : *this) REQUIRE(server.command({"SCRIPT", "FLUSH"}) == "OK");

        auto report = locks.release(*held);

        REQUIRE(report);
        CHECK(report->deleted + report->pending == 5);  // a slow node may be pending
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key_of("orders:42")) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "release reports nodes that are down without failing") {
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key_of("orders:42")) == 5; }));
        node(4).crash();

        auto report = locks.release(*held);

        REQUIRE(report);
        CHECK(report->deleted + report->pending == 4);  // a slow node may be pending
        CHECK(report->majority());
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key_of("orders:42")) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "releasing an empty handle is an invalid argument") {
        auto locks = make_client();

        auto report = locks.release(redlock::lock{});

        REQUIRE_FALSE(report);
        CHECK(report.error().code == redlock::errc::invalid_argument);
    }

    TEST_CASE_FIXTURE(cluster, "release_async delivers the report to its callback") {
        std::optional<redlock::result<redlock::release_report>> outcome;
        redlock_test::countdown done{1};
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);

        locks.release_async(*held, [&](redlock::result<redlock::release_report> report) {
            outcome.emplace(std::move(report));
            done.count_down();
        });

        REQUIRE(done.wait_for(redlock_test::scaled(5s)));
        REQUIRE(outcome);
        REQUIRE(*outcome);
        CHECK((*outcome)->deleted + (*outcome)->pending == 5);  // a slow node may be pending
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return total_keys() == 0; }));
    }
}
