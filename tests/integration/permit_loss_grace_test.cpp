// Issue 36 on real servers: a waiting semaphore acquisition whose attempt was lost
// hears the slower nodes out (the loss grace). A late yes heard then counts only
// for the permit it granted; before the fix it counted on the exclusive tally,
// so yeses for different permits added up to a "win" and the waiter was handed a
// permit no majority granted (an index read from an empty optional: 3 or 4 with
// K = 2), while two other holders held both permits on a majority.
//
// The nodes are prepared by hand: two foreign holders hold the semaphore's two
// permits, each on a majority, with gaps that make every attempt of ours answer
//   A: permit 0 (permit 1 held there)   B: permit 1 (permit 0 held there)
//   C, D: refused (both held)           E: permit 0, late
// After A..D no permit can reach three votes: the attempt is lost, and the waiter
// waits out the loss grace (as long again as the majority took). All five nodes
// are behind fault proxies: A..D answer after 2 x 250 ms, E after 2 x 400 ms, so
// E's yes arrives inside the grace (which ends near 1000 ms), not a timeout.
// Pure counterpart: tests/unit/permit_safety_test.cpp.
#include "support/cluster.hpp"
#include "support/command_stats.hpp"
#include "support/fault_proxy.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::elapsed_since;
using redlock_test::fault_proxy;
using steady = std::chrono::steady_clock;

namespace {

constexpr int k_permits = 2;
constexpr std::size_t node_a = 0;
constexpr std::size_t node_e = 4;
// Round trips: A..D 500 ms, E 800 ms. The attempt is lost at ~500 ms, so its
// grace ends at ~1000 ms: E's answer is 300 ms after the loss and 200 ms before
// the end, margins for a loaded machine (sanitizers, 3 tests per core).
constexpr auto fast_latency = 250ms;
constexpr auto slow_latency = 400ms;

// Foreign holders' values: 32 hex digits, '|', the holder text (README, "Who holds a lock").
const std::string holder_of_0 = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0|foreign holder of permit 0";
const std::string holder_of_1 = "f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1|foreign holder of permit 1";

/// Five servers, each behind its own proxy; the client talks to the proxies.
struct proxied_cluster : cluster {
    std::vector<std::unique_ptr<fault_proxy>> proxies;

    proxied_cluster() {
        for (const auto& server : *this)
            proxies.push_back(std::make_unique<fault_proxy>(server.port()));
    }

    [[nodiscard]] auto proxied_config() const -> redlock::client_config {
        std::vector<redlock::node_address> addresses;
        for (const auto& proxy : proxies) addresses.push_back(proxy->address());
        auto settings = redlock_test::fixture_config(std::move(addresses));
        settings.connect_timeout = 2s;
        settings.request_timeout = 3s;  // E's 800 ms is an answer, never a timeout
        settings.lock.ttl = 10s;        // a win after 800 ms is still valid
        return settings;
    }

    /// A..D slow, E slower: the shape described at the top.
    void slow_down() {
        for (std::size_t i = 0; i < proxies.size(); ++i)
            proxies[i]->set_latency(i == node_e ? slow_latency : fast_latency);
    }

    [[nodiscard]] auto permit_key(int p) const -> std::string {
        return key_of("pool") + "|permit|" + std::to_string(p);
    }

    /// On each node at once (one script): the permits named held by their holders
    /// for `ms`, and the semaphore's K as the grants left it.
    void plant(std::size_t node, bool permit0, bool permit1, long long ms) {
        (void)this->node(node).command(
            {"EVAL",
             "if ARGV[1] == '1' then redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[5]) end "
             "if ARGV[2] == '1' then redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5]) end "
             "redis.call('SET', KEYS[1], ARGV[6], 'PX', ARGV[5]) return 1",
             "3", key_of("pool") + "|permits", permit_key(0), permit_key(1), permit0 ? "1" : "0",
             permit1 ? "1" : "0", holder_of_0, holder_of_1, std::to_string(ms),
             std::to_string(k_permits)});
    }

    /// The foreign holders: permit 0 on B, C, D and permit 1 on A, C, D, E — each on
    /// a majority, so the semaphore is full while they last.
    void plant_foreign_holders(long long ms) {
        plant(0, false, true, ms);  // A
        plant(1, true, false, ms);  // B
        plant(2, true, true, ms);   // C
        plant(3, true, true, ms);   // D
        plant(4, false, true, ms);  // E
    }

    /// On how many nodes `value` holds permit `p`.
    [[nodiscard]] auto holding(int p, const std::string& value) const -> int {
        return count_holding(permit_key(p), value);
    }

    [[nodiscard]] auto script_calls(std::size_t node, const std::string& name) const -> long long {
        return redlock_test::command_calls(redlock_test::command_stats((*this)[node]), name);
    }
};

/// A waiting acquisition of one of K = 2 permits.
auto waiting_permit(std::chrono::milliseconds max_wait) -> redlock::lock_options {
    redlock::lock_options o;
    o.permits = k_permits;
    o.max_wait = max_wait;
    return o;
}

/// Everything a lease must be: a permit below K, held by its value on a majority.
void check_lease(const proxied_cluster& nodes, const redlock::lock& lease) {
    const int permit = lease.permit().value_or(-1);
    INFO("granted permit " << permit << " of " << k_permits);
    CHECK(permit >= 0);
    CHECK(permit < k_permits);
    if (permit >= 0 && permit < k_permits) CHECK(nodes.holding(permit, lease.value()) >= 3);
}

/// A client connected through the proxies, its permit script and wake connections
/// already in place (no NOSCRIPT round trip, no subscription on the way), the
/// servers' command counts reset.
auto ready_client(proxied_cluster& nodes) -> redlock::client {
    auto locks = nodes.make_client(nodes.proxied_config());
    REQUIRE(redlock_test::warm_up(locks));
    auto warm = locks.acquire("warm-up", [] {
        redlock::lock_options o;
        o.permits = k_permits;
        return o;
    }());
    REQUIRE(warm);
    REQUIRE(locks.release(*warm));
    locks.open_wake_connections();
    REQUIRE(redlock_test::wait_until(5s, [&] { return locks.stats().subscribers_ready == 5; }));
    for (const auto& server : nodes) REQUIRE(server.command({"CONFIG", "RESETSTAT"}));
    return locks;
}

}  // namespace

TEST_SUITE("permit loss grace") {
    TEST_CASE_FIXTURE(proxied_cluster,
                      "a waiter's late yes for another permit in its loss grace grants nothing") {
        auto locks = ready_client(*this);
        plant_foreign_holders(60'000);  // outlive the test: the semaphore stays full
        slow_down();

        const auto start = steady::now();
        auto got = locks.acquire("pool", waiting_permit(2s));
        const auto took = elapsed_since(start);
        INFO("took " << took.count() << " ms");

        // The semaphore is full (two holders, each on a majority): no third holder.
        CHECK_FALSE(got);
        if (got) {
            check_lease(*this, *got);
            (void)locks.release(*got);
        } else {
            CHECK(got.error().code == redlock::errc::contended);
            CHECK(got.error().attempts >= 1);
        }
        // The path was the one under test: E answered every attempt within the loss
        // grace, never as a timeout. A node whose answer came after the grace is
        // released as a precaution by EVAL (its outcome unknown), one that granted
        // in time by EVALSHA: so E's counts match A's, whose answer always came in
        // time (one grant and one release per attempt, the dequeue at the end).
        CHECK(locks.stats().timeouts == 0);
        for (const std::string name : {"evalsha", "eval"}) {
            INFO(name);
            CHECK(script_calls(node_e, name) == script_calls(node_a, name));
            CHECK(script_calls(node_a, name) >= 1);
        }
        // Nothing of ours is left: the foreign holders hold exactly what they held.
        CHECK(holding(0, holder_of_0) == 3);
        CHECK(holding(1, holder_of_1) == 4);
        CHECK(count_holding(permit_key(0)) == 3);
        CHECK(count_holding(permit_key(1)) == 4);
    }

    TEST_CASE_FIXTURE(proxied_cluster,
                      "a waiter with late yeses for another permit is granted only once the "
                      "foreign holders expire, on a majority") {
        auto locks = ready_client(*this);
        constexpr auto foreign_ttl = 3000ms;
        const auto planted = steady::now();  // before: they expire no sooner than 3 s from here
        plant_foreign_holders(foreign_ttl.count());
        slow_down();

        auto got = locks.acquire("pool", waiting_permit(15s));
        const auto granted_after = elapsed_since(planted);
        INFO("granted " << granted_after.count() << " ms after the foreign holders were planted");

        REQUIRE(got);
        // Not while both foreign holders held their majorities: a permit can only be
        // won once some of their keys expired. (A few ms of slack for the servers'
        // clocks against ours.)
        CHECK(granted_after >= foreign_ttl - 50ms);
        check_lease(*this, *got);
        CHECK(locks.stats().timeouts == 0);
        REQUIRE(locks.release(*got));
    }
}
