#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

using acquired = std::optional<redlock::result<redlock::lock>>;
using released = std::optional<redlock::result<redlock::release_report>>;

auto remaining_time(std::chrono::steady_clock::time_point deadline) -> std::chrono::milliseconds {
    auto left = deadline - std::chrono::steady_clock::now();
    return std::max(0ms, std::chrono::duration_cast<std::chrono::milliseconds>(left));
}

}  // namespace

TEST_SUITE("concurrency") {
    TEST_CASE_FIXTURE(cluster,
                      "a thousand concurrent acquisitions all succeed and release cleanly") {
        constexpr std::size_t count = 1000;
        auto deadline = std::chrono::steady_clock::now() + 30s;
        // Declared before the client, so that they outlive any callback it still runs.
        std::vector<acquired> locks_taken(count);
        std::vector<released> reports(count);
        redlock_test::countdown all_acquired{count};
        redlock_test::countdown all_released{count};
        // Correctness with a thousand in flight, not speed: 5000 pipelined commands per node
        // can miss a 50 ms deadline on a loaded machine (ctest -j), so the bound is generous.
        auto settings = config();
        settings.request_timeout = 1000ms;
        auto locks = make_client(settings);

        for (std::size_t i = 0; i < count; ++i) {
            locks.acquire_async("job:" + std::to_string(i), {},
                                [&, i](redlock::result<redlock::lock> r) {
                                    locks_taken[i].emplace(std::move(r));
                                    all_acquired.count_down();
                                });
        }
        REQUIRE(all_acquired.wait_for(remaining_time(deadline)));
        auto granted =
            std::ranges::count_if(locks_taken, [](const acquired& r) { return r && *r; });
        REQUIRE(static_cast<std::size_t>(granted) == count);
        for (std::size_t i = 0; i < count; ++i) {
            locks.release_async(**locks_taken[i],
                                [&, i](redlock::result<redlock::release_report> r) {
                                    reports[i].emplace(std::move(r));
                                    all_released.count_down();
                                });
        }
        REQUIRE(all_released.wait_for(remaining_time(deadline)));

        auto with_majority = std::ranges::count_if(
            reports, [](const released& r) { return r && *r && (*r)->majority(); });
        CHECK(static_cast<std::size_t>(with_majority) == count);
        CHECK(total_keys() == 0);
        CHECK(locks.stats().acquired == count);
    }

    TEST_CASE_FIXTURE(cluster, "of two clients racing for one resource exactly one wins") {
        acquired first_outcome;
        acquired second_outcome;
        redlock_test::countdown both{2};
        auto first = make_client();
        auto second = make_client();
        auto record = [&](acquired& slot) {
            return [&](redlock::result<redlock::lock> r) {
                slot.emplace(std::move(r));
                both.count_down();
            };
        };

        first.acquire_async("orders:42", {}, record(first_outcome));
        second.acquire_async("orders:42", {}, record(second_outcome));

        REQUIRE(both.wait_for(redlock_test::scaled(10s)));
        REQUIRE(first_outcome);
        REQUIRE(second_outcome);
        CHECK(first_outcome->has_value() != second_outcome->has_value());
        const auto& loser = first_outcome->has_value() ? *second_outcome : *first_outcome;
        REQUIRE_FALSE(loser);
        CHECK(loser.error().code == redlock::errc::contended);
    }

    TEST_CASE_FIXTURE(cluster, "blocking calls from inside a callback return would_deadlock") {
        acquired outer;
        acquired inner;
        released inner_release;
        redlock_test::countdown done{1};
        auto locks = make_client();

        locks.acquire_async("outer", {}, [&](redlock::result<redlock::lock> r) {
            inner.emplace(locks.acquire("inner"));
            if (r) inner_release.emplace(locks.release(*r));
            outer.emplace(std::move(r));
            done.count_down();
        });

        REQUIRE(done.wait_for(redlock_test::scaled(5s)));
        REQUIRE(outer);
        REQUIRE(*outer);
        REQUIRE(inner);
        REQUIRE_FALSE(*inner);
        CHECK(inner->error().code == redlock::errc::would_deadlock);
        REQUIRE(inner_release);
        REQUIRE_FALSE(*inner_release);
        CHECK(inner_release->error().code == redlock::errc::would_deadlock);
        CHECK(count_holding(key_of("inner")) == 0);
        auto report = locks.release(**outer);  // from the test thread it works
        REQUIRE(report);
        CHECK(report->majority());
    }

    TEST_CASE_FIXTURE(cluster, "blocking calls from many threads on one client all complete") {
        constexpr int threads = 8;
        constexpr int rounds = 20;
        std::vector<int> failures(threads, 0);
        auto locks = make_client();

        {
            std::vector<std::jthread> workers;
            for (int t = 0; t < threads; ++t) {
                workers.emplace_back([&, t] {
                    auto resource = "worker:" + std::to_string(t);
                    for (int i = 0; i < rounds; ++i) {
                        auto held = locks.acquire(resource);
                        if (!held || !locks.release(*held)) ++failures[static_cast<std::size_t>(t)];
                    }
                });
            }
        }

        CHECK(std::ranges::count(failures, 0) == threads);
        CHECK(total_keys() == 0);
    }
}
