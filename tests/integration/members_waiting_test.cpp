// Waiting, the hand-off and renewal on every member kind: three Redis Cluster members, and a
// mixed quorum of a standalone master, a cluster and a Sentinel-managed master
// (support/member_deployment), all real servers. The lock kinds, extend, status and check are
// in members_kinds_test.cpp.
//
// What a waiter's latency should be. Release notifications travel only over the standalone
// members' subscriber connections (README, "Cluster and Sentinel members"):
// - three clusters: no subscriber at all, so a queued waiter (targeted, fair, broadcast) wakes
//   only by re-checking, every min(lock.waiter_ttl / 2, 2 x request_timeout) = 100 ms here; a
//   poller retries after retry.delay + jitter = 50..100 ms. Either way ~100 ms plus a round.
// - mixed: the standalone member's notification wakes a queued waiter at once (a few ms); a
//   poller still takes 50..100 ms.
// The bound checked is a generous 1.5 s (a loaded machine; times the tests' slowdown factor,
// support/slowdown.hpp); the observed latency is printed.

#include "support/cluster.hpp"
#include "support/loss_record.hpp"
#include "support/member_deployment.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::deployment_kind;
using redlock_test::lock_key_of;
using redlock_test::member_deployment;
using redlock_test::scaled;
using redlock_test::wait_until;
using steady = std::chrono::steady_clock;

namespace {

/// An acquisition in flight, and when its callback ran.
struct pending {
    std::promise<redlock::result<redlock::lock>> done;
    std::future<redlock::result<redlock::lock>> future = done.get_future();
    steady::time_point at{};
};

auto start_waiting(redlock::client& c, const std::string& resource, redlock::wait_mode mode)
    -> std::shared_ptr<pending> {
    auto p = std::make_shared<pending>();
    redlock::lock_options o;
    o.ttl = 5000ms;
    o.max_wait = 15s;
    o.wait = mode;
    c.acquire_async(resource, o, [p](redlock::result<redlock::lock> r) {
        p->at = steady::now();
        p->done.set_value(std::move(r));
    });
    return p;
}

auto mode_name(redlock::wait_mode mode) -> std::string {
    switch (mode) {
        case redlock::wait_mode::targeted:
            return "targeted";
        case redlock::wait_mode::fair:
            return "fair";
        case redlock::wait_mode::broadcast:
            return "broadcast";
        case redlock::wait_mode::poll:
            return "poll";
    }
    return "?";
}

/// Alice holds; Bob waits in `mode`; Alice releases: Bob gets the lock, soon.
void one_wait(const member_deployment& d, redlock::client& alice, redlock::client& bob,
              redlock::wait_mode mode) {
    const std::string r = "wait-" + mode_name(mode);
    CAPTURE(mode_name(mode));
    auto held = alice.acquire(r, {.ttl = 10s});
    REQUIRE(held);
    const auto attempts = bob.stats().attempts;
    auto waiter = start_waiting(bob, r, mode);
    // A second attempt has started: the first was refused, and Bob is waiting.
    REQUIRE(wait_until(scaled(5s), [&] { return bob.stats().attempts >= attempts + 2; }));
    CHECK(waiter->future.wait_for(0ms) == std::future_status::timeout);

    const auto released_at = steady::now();
    REQUIRE(alice.release(*held));
    REQUIRE(waiter->future.wait_for(redlock_test::scaled(15s)) == std::future_status::ready);
    auto granted = waiter->future.get();
    REQUIRE(granted);
    const auto latency =
        std::chrono::duration_cast<std::chrono::milliseconds>(waiter->at - released_at);
    MESSAGE(d.name() << ", " << mode_name(mode) << ": granted " << latency.count()
                     << " ms after the release began");
    CHECK(latency < redlock_test::scaled_within(1500ms, 8s));  // Alice's TTL: 10 s
    // A majority: woken by the first member's notification, the waiter may ask another
    // member before the release has landed there, and that one refuses.
    CHECK(d.holding(lock_key_of(r), granted->value()) >= 2);
    REQUIRE(bob.release(*granted));
}

/// A release hands the lock to a waiter of the same client.
void hand_off(const member_deployment& d, redlock::client& alice, redlock::wait_mode mode) {
    CAPTURE(mode_name(mode));
    const std::string r = "ledger-" + mode_name(mode);
    const std::string queue = redlock_test::queue_key_of(r);
    auto held = alice.acquire(r, {.ttl = 10s});
    REQUIRE(held);
    auto waiter = start_waiting(alice, r, mode);
    // Queued in every member, so that every member's release passes it the lock.
    REQUIRE(wait_until(scaled(5s), [&] {
        for (std::size_t m = 0; m < d.size(); ++m) {
            if (d.command(m, queue, {"ZCARD", queue}) != "1") return false;
        }
        return true;
    }));
    const auto before = alice.stats();
    REQUIRE(alice.release(*held));
    REQUIRE(waiter->future.wait_for(redlock_test::scaled(10s)) == std::future_status::ready);
    auto granted = waiter->future.get();
    REQUIRE(granted);
    CHECK(alice.stats().handoffs - before.handoffs == 1);
    CHECK(granted->valid());
    CHECK(d.holding(lock_key_of(r), granted->value()) >= 2);
    REQUIRE(alice.release(*granted));
    CHECK(wait_until(scaled(2s), [&] { return d.with_key(lock_key_of(r)) == 0; }));
}

void waiting_and_hand_off(deployment_kind kind) {
    const member_deployment d{kind};
    CAPTURE(d.name());
    auto alice = redlock_test::create_client(d.config());
    auto bob = redlock_test::create_client(d.config());
    REQUIRE(redlock_test::warm_up(alice));
    REQUIRE(redlock_test::warm_up(bob));
    for (const auto mode : {redlock::wait_mode::targeted, redlock::wait_mode::fair,
                            redlock::wait_mode::broadcast, redlock::wait_mode::poll}) {
        one_wait(d, alice, bob, mode);
    }
    hand_off(d, alice, redlock::wait_mode::targeted);
    hand_off(d, alice, redlock::wait_mode::fair);
}

/// Clients on threads of their own contend for two resources (on whichever shards they
/// fall): every acquisition is granted in the end, and never to two holders at once.
void contenders(deployment_kind kind) {
    const member_deployment d{kind};
    CAPTURE(d.name());
    std::vector<redlock::client> clients;
    for (int i = 0; i < 4; ++i) {
        clients.push_back(redlock_test::create_client(d.config()));
        REQUIRE(redlock_test::warm_up(clients.back()));
    }
    constexpr int rounds = 5;
    const std::array<std::string, 2> resources{"contended-a", "contended-b"};
    std::array<std::atomic<int>, 2> inside{};
    std::atomic<int> overlaps{0};
    std::atomic<int> grants{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (auto& client : clients) {
        for (std::size_t r = 0; r < resources.size(); ++r) {
            threads.emplace_back([&, r] {
                for (int i = 0; i < rounds; ++i) {
                    auto held = client.acquire(resources[r], {.ttl = 5000ms, .max_wait = 20s});
                    if (!held) {
                        ++failures;
                        continue;
                    }
                    if (inside[r].fetch_add(1) != 0) ++overlaps;
                    std::this_thread::sleep_for(2ms);  // the critical section's work
                    inside[r].fetch_sub(1);
                    if (client.release(*held)) ++grants;
                }
            });
        }
    }
    for (auto& t : threads) t.join();
    CHECK(overlaps == 0);
    CHECK(failures == 0);
    CHECK(grants == static_cast<int>(clients.size() * resources.size()) * rounds);
    for (const auto& r : resources)
        CHECK(wait_until(scaled(2s), [&] { return d.with_key(lock_key_of(r)) == 0; }));
}

void renewal_and_loss(deployment_kind kind) {
    const member_deployment d{kind};
    CAPTURE(d.name());
    redlock_test::loss_record loss;  // outlives the client
    auto alice = redlock_test::create_client(d.config());
    REQUIRE(redlock_test::warm_up(alice));
    const std::string r = "renewed";
    const std::string key = lock_key_of(r);
    auto held = alice.acquire(r, loss.options(600ms));
    REQUIRE(held);
    REQUIRE(wait_until(scaled(3s), [&] { return d.holding(key, held->value()) == 3; }));
    const auto renewals = alice.stats().renewals;

    // Three TTLs: without renewals the keys would have expired twice over.
    CHECK(redlock_test::holds_for(1800ms, [&] { return held->valid(); }));
    CHECK(alice.stats().renewals - renewals >= 3);  // one every 200 ms
    CHECK(d.holding(key, held->value()) == 3);
    CHECK(loss.calls == 0);

    // The key deleted in two members of three: the next renewal finds it lost.
    // A renewal that lands between the two deletes repairs the first member (a majority
    // still held it): delete again until a renewal sees both gone.
    const auto deleted_at = steady::now();
    bool lost = false;
    while (!lost && steady::now() - deleted_at < redlock_test::scaled(5s)) {
        for (std::size_t m : {0, 1}) (void)d.command(m, key, {"DEL", key});
        lost = loss.arrived.wait_for(redlock_test::scaled(150ms));
    }
    REQUIRE(lost);
    {
        std::lock_guard guard{loss.mutex};
        REQUIRE(loss.why);
        CHECK(loss.why->code == redlock::errc::lock_lost);
        const auto refused =
            std::ranges::count_if(loss.why->nodes, [](const redlock::node_report& n) {
                return n.status == redlock::node_status::refused;
            });
        CHECK(refused >= 2);
        CHECK(loss.at - deleted_at < redlock_test::scaled(1500ms));
        CHECK(loss.lost_flag);
        CHECK_FALSE(loss.still_valid);
    }
    CHECK(held->lost());
    CHECK(alice.stats().locks_lost == 1);
    // The member that still had it is let go of at once, not a TTL later.
    CHECK(wait_until(scaled(2s), [&] { return d.with_key(key) == 0; }));
    CHECK(redlock_test::holds_for(300ms, [&] { return loss.calls == 1; }));
}

}  // namespace

TEST_SUITE("members") {
    TEST_CASE("three cluster members: a waiter gets the lock in every wait mode, and a hand-off") {
        waiting_and_hand_off(deployment_kind::three_clusters);
    }

    TEST_CASE(
        "standalone, cluster and Sentinel members: a waiter gets the lock in every wait "
        "mode, and a hand-off") {
        waiting_and_hand_off(deployment_kind::mixed);
    }

    TEST_CASE("three cluster members: contenders on threads, never two holders") {
        contenders(deployment_kind::three_clusters);
    }

    TEST_CASE(
        "standalone, cluster and Sentinel members: contenders on threads, never two "
        "holders") {
        contenders(deployment_kind::mixed);
    }

    TEST_CASE(
        "three cluster members: auto-renewal past the TTL, and on_lost when a majority "
        "lost the key") {
        renewal_and_loss(deployment_kind::three_clusters);
    }

    TEST_CASE(
        "standalone, cluster and Sentinel members: auto-renewal past the TTL, and on_lost "
        "when a majority lost the key") {
        renewal_and_loss(deployment_kind::mixed);
    }
}
