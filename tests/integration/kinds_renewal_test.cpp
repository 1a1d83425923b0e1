// Auto-renewal and the lost signal for readers and semaphore permits, against
// five real redis-server processes: a renewed reader or permit outlives its
// TTL on the nodes; one taken over on a majority is reported lost.
#include "support/cluster.hpp"
#include "support/lock_kinds.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::scaled;
using redlock_test::wait_until;

namespace {

auto renewed(std::chrono::milliseconds ttl) -> redlock::lock_options {
    redlock::lock_options o;
    o.ttl = ttl;
    o.auto_renew = true;
    o.attempts = 1;
    return o;
}

}  // namespace

TEST_CASE("a renewed reader holds past its TTL, and a writer still cannot get in") {
    cluster nodes;
    auto c = nodes.make_client();
    auto o = renewed(500ms);
    o.shared = true;
    auto r = c.acquire("doc", o);
    REQUIRE(r);
    const auto renewals_before = c.stats().renewals;
    // Three TTLs later the reader is still valid, through renewals alone.
    REQUIRE(wait_until(scaled(5s), [&] { return c.stats().renewals >= renewals_before + 4; }));
    CHECK(r->valid());
    CHECK(wait_until(scaled(2s), [&] {
        return redlock_test::count_reading(nodes, nodes.key_of("doc"), r->value()) == 5;
    }));
    redlock::lock_options w;
    w.attempts = 1;
    CHECK_FALSE(c.acquire("doc", w));
    REQUIRE(c.release(*r));
}

TEST_CASE("a reader whose nodes were taken over by a writer is reported lost") {
    cluster nodes;
    auto c = nodes.make_client();
    std::atomic<int> lost_calls{0};
    // A TTL well above the bound below: letting go in time is the release on
    // loss (once the reader's validity has ended), not the expiry.
    auto o = renewed(3000ms);
    o.shared = true;
    o.on_lost = [&](const redlock::lock&, const redlock::error& why) {
        if (why.code == redlock::errc::lock_lost) ++lost_calls;
    };
    auto r = c.acquire("doc", o);
    REQUIRE(r);
    // What a writer would leave after the reader's keys were lost on a majority
    // (say, three nodes restarted without persistence and a writer came by). In one
    // script per node: a renewal that landed between a DEL and a SET would find the
    // reader gone and no writer there, and repair it (a majority still held it).
    const std::string key = nodes.key_of("doc");
    for (int i : {0, 1, 2}) {
        (void)nodes[i].command({"EVAL",
                                "redis.call('DEL', KEYS[2]) "
                                "return redis.call('SET', KEYS[1], 'a-writer', 'PX', 10000)",
                                "2", key, key + "|readers"});
    }
    REQUIRE(wait_until(scaled(3s), [&] { return lost_calls.load() == 1; }));
    const auto lost_at = std::chrono::steady_clock::now();
    CHECK(r->lost());
    CHECK(r->lost_token().stop_requested());
    CHECK_FALSE(r->valid());
    // Let go on the two nodes where it was still a reader: not before its validity
    // ends (it may still act until then), and well before the TTL its last
    // renewal gave it there.
    CHECK(redlock_test::count_reading(nodes, key, r->value()) == 2);
    CHECK(wait_until(scaled(3s),
                     [&] { return redlock_test::count_reading(nodes, key, r->value()) == 0; }));
    CHECK(std::chrono::steady_clock::now() >= r->valid_until());
    CHECK(std::chrono::steady_clock::now() - lost_at < 2500ms);
    CHECK(nodes.count_holding(key, "a-writer") == 3);
}

TEST_CASE("a renewed permit holds past its TTL, one taken over on a majority is reported lost") {
    cluster nodes;
    auto c = nodes.make_client();
    std::atomic<int> lost_calls{0};
    auto o = renewed(500ms);
    o.permits = 2;
    o.on_lost = [&](const redlock::lock&, const redlock::error&) { ++lost_calls; };
    auto p = c.acquire("pool", o);
    REQUIRE(p);
    const std::string permit_key =
        nodes.key_of("pool") + "|permit|" + std::to_string(p->permit().value_or(-1));
    const auto renewals_before = c.stats().renewals;
    REQUIRE(wait_until(scaled(5s), [&] { return c.stats().renewals >= renewals_before + 4; }));
    CHECK(p->valid());
    CHECK(wait_until(scaled(2s), [&] { return nodes.count_holding(permit_key, p->value()) == 5; }));

    for (int i : {0, 1, 2})
        (void)nodes[i].command({"SET", permit_key, "someone-else", "PX", "10000"});
    REQUIRE(wait_until(scaled(3s), [&] { return lost_calls.load() == 1; }));
    CHECK(p->lost());
    CHECK_FALSE(p->valid());
}

TEST_CASE("a permit lost on a majority is let go on the nodes that still had it") {
    cluster nodes;
    auto c = nodes.make_client();
    std::atomic<int> lost_calls{0};
    auto o = renewed(3000ms);  // well above the bound below: the release, not the expiry
    o.permits = 2;
    o.on_lost = [&](const redlock::lock&, const redlock::error&) { ++lost_calls; };
    auto p = c.acquire("pool", o);
    REQUIRE(p);
    const std::string permit_key =
        nodes.key_of("pool") + "|permit|" + std::to_string(p->permit().value_or(-1));
    REQUIRE(
        wait_until(scaled(2s), [&] { return nodes.count_holding(permit_key, p->value()) == 5; }));

    for (int i : {0, 1, 2})
        (void)nodes[i].command({"SET", permit_key, "someone-else", "PX", "10000"});
    REQUIRE(wait_until(scaled(3s), [&] { return lost_calls.load() == 1; }));
    const auto lost_at = std::chrono::steady_clock::now();
    // Once the permit's validity has ended, not before.
    CHECK(nodes.count_holding(permit_key, p->value()) == 2);
    CHECK(wait_until(scaled(3s), [&] { return nodes.count_holding(permit_key, p->value()) == 0; }));
    CHECK(std::chrono::steady_clock::now() >= p->valid_until());
    CHECK(std::chrono::steady_clock::now() - lost_at < 2500ms);
    CHECK(nodes.count_holding(permit_key, "someone-else") == 3);
}
