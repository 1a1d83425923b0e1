#include "support/cluster.hpp"
#include "support/loss_record.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::loss_record;

namespace {

/// Returns once a renewal has just gone through: the next one is a renew interval away.
auto await_fresh_renewal(const redlock::client& locks) -> bool {
    auto before = locks.stats().renewals;
    return redlock_test::wait_until(redlock_test::scaled(5s),
                                    [&] { return locks.stats().renewals > before; });
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
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key, held->value()) == 5; }));
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
        CHECK(released->deleted + released->pending == 5);  // a slow node may be pending
        CHECK_FALSE(held->valid());
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key) == 0; }));
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
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        auto held = locks.acquire("orders:42", loss.options(400ms));
        REQUIRE(held);
        REQUIRE(await_fresh_renewal(locks));
        for (int i : {0, 1, 2}) node(i).freeze();
        // No renewal can succeed from here on, so this is the deadline the loss must meet.
        auto renewals = locks.stats().renewals;
        auto deadline = held->valid_until();

        bool arrived = loss.arrived.wait_for(redlock_test::scaled(3s));

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
        CHECK(loss.at <= deadline + redlock_test::scaled(300ms));
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

        REQUIRE(loss.arrived.wait_for(redlock_test::scaled(5s)));

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
        CHECK(took < redlock_test::scaled(1000ms));
        // Renewed, the key would live on; it expires by its TTL of 400 ms instead.
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s),
                                       [&] { return count_holding(key) == 0; }));
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s), [&] { return !held->valid(); }));
        CHECK(redlock_test::holds_for(300ms, [&] { return count_holding(key) == 0; }));
        // Stopping is not losing: nothing is reported.
        CHECK(loss.calls == 0);
        CHECK_FALSE(held->lost());
    }

    TEST_CASE_FIXTURE(cluster,
                      "renewed locks are reported lost by their deadline even when renewal retries "
                      "are far apart") {
        // A long request deadline spaces the renewal retries (2 x request_timeout) beyond the
        // validity: the watchdog's deadline timer alone has to report each loss in time.
        constexpr std::size_t count = 16;
        std::vector<std::atomic<std::int64_t>> lost_at_ns(count);
        std::atomic<int> calls{0};
        redlock_test::countdown all_lost{count};
        auto settings = config();
        settings.request_timeout = 500ms;
        auto locks = make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        std::vector<redlock::lock> held;
        std::vector<std::chrono::steady_clock::time_point> first_deadline;
        for (std::size_t i = 0; i < count; ++i) {
            redlock::lock_options renewed;
            renewed.ttl = 1500ms;
            renewed.auto_renew = true;
            renewed.on_lost = [&, i](const redlock::lock&, const redlock::error&) {
                lost_at_ns[i] = std::chrono::steady_clock::now().time_since_epoch().count();
                ++calls;
                all_lost.count_down();
            };
            auto one = locks.acquire("job:" + std::to_string(i), renewed);
            REQUIRE(one);
            held.push_back(*one);
            first_deadline.push_back(one->valid_until());
            // Not synchronisation: spreads the locks over distinct loop turns and clock phases,
            // so that their renewals (and deadline timers) are independent samples.
            std::this_thread::sleep_for(3ms);
        }
        // Every lock renewed once: the renewal works, and the next one is a third of a TTL away.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] {
            for (std::size_t i = 0; i < count; ++i) {
                if (held[i].valid_until() == first_deadline[i]) return false;
            }
            return true;
        }));
        for (int i : {0, 1, 2}) node(i).freeze();
        // No renewal can succeed from here on: these are the deadlines the losses must meet.
        std::vector<std::chrono::steady_clock::time_point> deadline;
        for (const auto& one : held) deadline.push_back(one.valid_until());

        bool arrived = all_lost.wait_for(redlock_test::scaled(5s));

        for (int i : {0, 1, 2}) node(i).thaw();
        REQUIRE(arrived);
        int late = 0;
        std::string lateness;
        for (std::size_t i = 0; i < count; ++i) {
            std::chrono::steady_clock::time_point at{std::chrono::nanoseconds{lost_at_ns[i]}};
            // Two appends, not " " + ...: a false -Wrestrict with GCC 12 at -O2.
            lateness.append(" ").append(std::to_string(ms_between(deadline[i], at)));
            // Without the deadline timer the loss would come with a retry, a second late.
            if (at > deadline[i] + redlock_test::scaled_within(300ms, 600ms)) ++late;
            CHECK(held[i].lost());
        }
        INFO("each loss, in ms after its deadline:", lateness);
        CHECK(late == 0);
        CHECK(calls == static_cast<int>(count));
    }

    TEST_CASE_FIXTURE(cluster,
                      "releasing an auto-renewed lock while its renewal is due never reports it "
                      "lost") {
        loss_record loss;
        redlock_test::countdown blocker_entered{1};
        redlock_test::countdown blocker_may_leave{1};
        redlock_test::countdown released{1};
        auto locks = make_client();
        auto held = locks.acquire("orders:42", loss.options(300ms));
        REQUIRE(held);
        REQUIRE(await_fresh_renewal(locks));
        // A busy loop thread: a callback that runs long, as user callbacks sometimes do.
        locks.acquire_async("blocker", {}, [&](redlock::result<redlock::lock>) {
            blocker_entered.count_down();
            (void)blocker_may_leave.wait_for(redlock_test::scaled(5s));
        });
        REQUIRE(blocker_entered.wait_for(redlock_test::scaled(5s)));

        // Released from this thread while the loop is busy; the renewal (every 100 ms) comes
        // due before the loop gets to the release.
        locks.release_async(
            *held, [&](redlock::result<redlock::release_report>) { released.count_down(); });
        bool renewal_due = redlock_test::wait_until(
            2s, [&] { return held->valid_until() - std::chrono::steady_clock::now() < 150ms; });
        blocker_may_leave.count_down();

        CHECK(renewal_due);
        REQUIRE(released.wait_for(redlock_test::scaled(5s)));
        CHECK_FALSE(held->valid());
        CHECK(redlock_test::holds_for(300ms, [&] { return loss.calls == 0; }));
        {
            std::lock_guard guard{loss.mutex};
            INFO("on_lost said: ", loss.why ? loss.why->message : std::string{"nothing"});
            CHECK_FALSE(loss.why.has_value());
        }
        CHECK_FALSE(held->lost());
        CHECK_FALSE(held->lost_token().stop_requested());
        CHECK(locks.stats().locks_lost == 0);
        CHECK(count_holding(key_of("orders:42")) == 0);
    }
}
