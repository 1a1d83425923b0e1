#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// What on_lost saw. Declare it before the client, so that it outlives any callback.
struct loss_record {
    std::atomic<int> calls{0};
    redlock_test::countdown arrived{1};
    std::mutex mutex;
    std::optional<redlock::error> why;
    std::chrono::steady_clock::time_point at{};
    bool lost_flag = false;
    bool token_stopped = false;
    bool still_valid = true;

    auto options(std::chrono::milliseconds ttl) -> redlock::lock_options {
        redlock::lock_options renewed;
        renewed.ttl = ttl;
        renewed.auto_renew = true;
        renewed.on_lost = [this](const redlock::lock& held, const redlock::error& e) {
            auto now = std::chrono::steady_clock::now();
            {
                std::lock_guard guard{mutex};
                if (calls == 0) {
                    at = now;
                    why = e;
                    lost_flag = held.lost();
                    token_stopped = held.lost_token().stop_requested();
                    still_valid = held.valid();
                }
            }
            ++calls;
            arrived.count_down();
        };
        return renewed;
    }
};

/// Returns once a renewal has just gone through: the next one is a renew interval away.
auto await_fresh_renewal(const redlock::client& locks) -> bool {
    auto before = locks.stats().renewals;
    return redlock_test::wait_until(5s, [&] { return locks.stats().renewals > before; });
}

auto ms_between(std::chrono::steady_clock::time_point from,
                std::chrono::steady_clock::time_point to) -> long long {
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

TEST_SUITE("renewal") {
    TEST_CASE_FIXTURE(
        cluster, "auto-renewal keeps a lock alive for five times its TTL and stops on release") {
        loss_record loss;
        auto locks = make_client();
        auto key = key_of("orders:42");
        auto held = locks.acquire("orders:42", loss.options(400ms));
        REQUIRE(held);
        REQUIRE(
            redlock_test::wait_until(1s, [&] { return count_holding(key, held->value()) == 5; }));
        auto renewals_before = locks.stats().renewals;

        // Five TTLs: without renewals the key would have expired four times over.
        bool kept_alive = redlock_test::holds_for(
            2000ms, [&] { return held->valid() && count_holding(key, held->value()) == 5; });
        auto renewals_while_held = locks.stats().renewals - renewals_before;
        auto released = locks.release(*held);
        auto renewals_at_release = locks.stats().renewals;

        CHECK(kept_alive);
        // One every ~134 ms (a third of the TTL); a loaded machine may manage fewer.
        CHECK(renewals_while_held >= 5);
        REQUIRE(released);
        CHECK(released->deleted == 5);
        CHECK_FALSE(held->valid());
        CHECK(count_holding(key) == 0);
        CHECK(redlock_test::holds_for(1000ms, [&] {
            return locks.stats().renewals == renewals_at_release && count_holding(key) == 0;
        }));
        CHECK(loss.calls == 0);
        CHECK_FALSE(held->lost());
        CHECK(locks.stats().locks_lost == 0);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a renewed lock is reported lost once, by its deadline, when a majority "
                      "freezes") {
        loss_record loss;
        auto locks = make_client();
        REQUIRE(redlock_test::wait_until(2s, [&] { return locks.stats().nodes_connected == 5; }));
        auto held = locks.acquire("orders:42", loss.options(400ms));
        REQUIRE(held);
        REQUIRE(await_fresh_renewal(locks));
        for (int i : {0, 1, 2}) node(i).freeze();
        // No renewal can succeed from here on, so this is the deadline the loss must meet.
        auto renewals = locks.stats().renewals;
        auto deadline = held->valid_until();

        bool arrived = loss.arrived.wait_for(3s);

        for (int i : {0, 1, 2}) node(i).thaw();
        REQUIRE(arrived);
        CHECK(redlock_test::holds_for(300ms, [&] { return loss.calls == 1; }));
        std::lock_guard guard{loss.mutex};
        REQUIRE(loss.why);
        CHECK(loss.why->code == redlock::errc::lock_lost);
        CHECK_FALSE(loss.why->message.empty());
        CHECK(loss.lost_flag);
        CHECK(loss.token_stopped);
        CHECK_FALSE(loss.still_valid);
        INFO("lost signal ", ms_between(deadline, loss.at), " ms after the deadline");
        CHECK(loss.at <= deadline + 300ms);
        CHECK(held->lost());
        CHECK(held->lost_token().stop_requested());
        CHECK_FALSE(held->valid());
        CHECK(held->remaining() == 0ms);
        CHECK(locks.stats().renewals == renewals);
        CHECK(locks.stats().locks_lost == 1);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a renewed lock whose key was deleted on a majority is reported lost at its "
                      "next renewal, before its validity ends") {
        loss_record loss;
        auto locks = make_client();
        auto key = key_of("orders:42");
        auto held = locks.acquire("orders:42", loss.options(2000ms));
        REQUIRE(held);
        REQUIRE(await_fresh_renewal(locks));
        for (int i : {0, 1, 2}) REQUIRE(node(i).command({"DEL", key}) == "1");
        auto deleted_at = std::chrono::steady_clock::now();
        auto deadline = held->valid_until();

        REQUIRE(loss.arrived.wait_for(5s));

        std::lock_guard guard{loss.mutex};
        REQUIRE(loss.why);
        CHECK(loss.why->code == redlock::errc::lock_lost);
        auto refused = std::ranges::count_if(loss.why->nodes, [](const redlock::node_report& r) {
            return r.status == redlock::node_status::refused;
        });
        CHECK(refused >= 3);
        INFO("lost signal ", ms_between(deleted_at, loss.at), " ms after the DELs, ",
             ms_between(loss.at, deadline), " ms before the deadline");
        // The next renewal is at most a third of the TTL (~667 ms) away.
        CHECK(loss.at < deadline);
        CHECK(loss.at - deleted_at < 1500ms);
        CHECK(loss.lost_flag);
        CHECK(loss.token_stopped);
        CHECK_FALSE(loss.still_valid);
        CHECK(held->lost());
        CHECK_FALSE(held->valid());
        CHECK(loss.calls == 1);
    }

    TEST_CASE_FIXTURE(cluster,
                      "destroying a client stops the renewals of its locks, which then expire") {
        loss_record loss;
        std::optional<redlock::client> locks{make_client()};
        auto key = key_of("orders:42");
        auto held = locks->acquire("orders:42", loss.options(400ms));
        REQUIRE(held);
        REQUIRE(await_fresh_renewal(*locks));
        REQUIRE(await_fresh_renewal(*locks));
        auto start = std::chrono::steady_clock::now();

        locks.reset();

        auto took = std::chrono::steady_clock::now() - start;
        CHECK(took < 1000ms);
        // Renewed, the key would live on; it expires by its TTL of 400 ms instead.
        CHECK(redlock_test::wait_until(2s, [&] { return count_holding(key) == 0; }));
        CHECK(redlock_test::wait_until(1s, [&] { return !held->valid(); }));
        CHECK(redlock_test::holds_for(300ms, [&] { return count_holding(key) == 0; }));
        // Stopping is not losing: nothing is reported.
        CHECK(loss.calls == 0);
        CHECK_FALSE(held->lost());
    }

    TEST_CASE_FIXTURE(cluster, "releasing auto-renewed locks never reports them lost") {
        // Many short-lived renewed locks, so that releases race with renewals due.
        constexpr std::size_t count = 100;
        std::atomic<int> losses{0};
        redlock_test::countdown all_released{count};
        auto locks = make_client();
        redlock::lock_options renewed;
        renewed.ttl = 150ms;
        renewed.auto_renew = true;
        renewed.on_lost = [&](const redlock::lock&, const redlock::error&) { ++losses; };
        std::vector<redlock::lock> held;
        for (std::size_t i = 0; i < count; ++i) {
            auto one = locks.acquire("job:" + std::to_string(i), renewed);
            REQUIRE(one);
            held.push_back(*one);
        }
        REQUIRE(await_fresh_renewal(locks));

        for (const auto& one : held) {
            locks.release_async(
                one, [&](redlock::result<redlock::release_report>) { all_released.count_down(); });
        }

        REQUIRE(all_released.wait_for(10s));
        CHECK(redlock_test::holds_for(300ms, [&] { return losses == 0; }));
        CHECK(locks.stats().locks_lost == 0);
        CHECK(std::ranges::none_of(held, [](const redlock::lock& one) { return one.lost(); }));
        CHECK(total_keys() == 0);
    }
}
