// Quorum members that are real deployments: Redis Clusters and Sentinel-managed
// masters, mixed with standalone masters, against real redis-server and
// redis-sentinel processes (tests/support/cluster_member, sentinel_member).
// Resharding exercises ASK and MOVED; failovers exercise the quarantine and
// wait_replicas (README, "Cluster and Sentinel members").

#include "sansio/hash_slot.hpp"
#include "support/cluster.hpp"
#include "support/cluster_member.hpp"
#include "support/fault_proxy.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"
#include "support/sentinel_member.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster_member;
using redlock_test::cluster_member_options;
using redlock_test::fault_proxy;
using redlock_test::lock_key;
using redlock_test::sentinel_member;

namespace {

/// A config of the given members only (no standalone node), with the test settings.
auto members_config(std::vector<redlock::cluster_member> clusters,
                    std::vector<redlock::sentinel_member> sentinels = {})
    -> redlock::client_config {
    redlock::client_config config = redlock_test::fixture_config({});
    config.clusters = std::move(clusters);
    config.sentinel_masters = std::move(sentinels);
    // A first map or a first master address costs a round trip or two more than a node.
    config.request_timeout = redlock_test::scaled(200ms);
    config.lock.ttl = 3000ms;
    return config;
}

auto of(const cluster_member& c, int wait_replicas = 0) -> redlock::cluster_member {
    redlock::cluster_member m;
    m.seeds = c.seeds();
    m.wait_replicas = wait_replicas;
    return m;
}

auto of(const sentinel_member& s) -> redlock::sentinel_member {
    redlock::sentinel_member m;
    m.sentinels = s.sentinels();
    m.master_name = s.master_name();
    return m;
}

/// A resource whose lock lives in a slot `c`'s master `master` serves now.
auto resource_on(const cluster_member& c, std::size_t master, const std::string& stem)
    -> std::string {
    for (int i = 0;; ++i) {
        std::string r = stem + std::to_string(i);
        if (c.master_of_slot(redlock::detail::resource_slot(r)) == master) return r;
    }
}

}  // namespace

TEST_CASE("members of every kind, mixed: a lock needs a majority of all of them") {
    redlock_test::cluster standalone{2};
    cluster_member shards{{.shards = 3, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
    sentinel_member managed;
    redlock::client_config config = standalone.config();
    config.clusters = {of(shards)};
    config.sentinel_masters = {of(managed)};
    config.request_timeout = redlock_test::scaled(200ms);
    auto client = redlock_test::create_client(config);
    REQUIRE(redlock_test::warm_up(client));
    CHECK(client.node_count() == 4);
    for (std::size_t master = 0; master < 3; ++master) {
        const std::string r = resource_on(shards, master, "orders:");
        auto held = client.acquire(r, {.ttl = 5s});
        REQUIRE(held);
        // Every member got it: the standalone nodes, the slot's master, Sentinel's master.
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return standalone.count_holding(lock_key(r), held->value()) == 2 &&
                   shards.get(lock_key(r)) == held->value() &&
                   managed.server(managed.master_index()).get(lock_key(r)) == held->value();
        }));
        auto rival = redlock_test::create_client(config);
        CHECK_FALSE(rival.acquire(r, {.ttl = 5s}));
        REQUIRE(client.release(*held));
        CHECK_FALSE(shards.exists(lock_key(r)));
    }
    const auto health = client.check();
    REQUIRE(health);
    REQUIRE(health->nodes.size() == 4);
    CHECK(health->nodes[2].topology.size() >= 3);  // three masters, their slots
    CHECK(health->nodes[3].topology.at(0).find("redlock-m") != std::string::npos);
}

TEST_CASE("a slot resharded under locks: ASK while it moves, MOVED after, no lock lost") {
    cluster_member shards{{.shards = 2, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
    auto client = redlock_test::create_client(members_config({of(shards)}));
    REQUIRE(redlock_test::warm_up(client));
    const std::string first = resource_on(shards, 0, "moving:");
    const auto slot = redlock::detail::resource_slot(first);
    auto held = client.acquire(first, {.ttl = 10s});
    REQUIRE(held);
    shards.begin_move_slot(slot, 1);
    // A new lock in the slot while it moves: the old owner answers ASK for the absent key.
    const std::string second = first + "-b";
    std::string in_slot = second;
    for (int i = 0; redlock::detail::resource_slot(in_slot) != slot; ++i) {
        in_slot = "{" + first + "}:" + std::to_string(i);
    }
    auto during = client.acquire(in_slot, {.ttl = 10s});
    CHECK(during);
    // The target served it after an ASKING: the ASK was followed, not taken for a refusal.
    const auto stats = shards.node(1).command({"INFO", "commandstats"});
    REQUIRE(stats);
    CHECK(stats->find("cmdstat_asking:calls=") != std::string::npos);
    shards.finish_move_slot(slot, 1);
    CHECK(shards.master_of_slot(slot) == 1);
    // The moved key kept its holder: a rival is refused, and the holder extends and releases
    // through MOVED.
    auto rival = redlock_test::create_client(members_config({of(shards)}));
    CHECK_FALSE(rival.acquire(first, {.ttl = 1s}));
    CHECK(client.extend(*held, 10s));
    CHECK(client.release(*held));
    CHECK_FALSE(shards.exists(lock_key(first)));
    if (during) CHECK(client.release(*during));
    // The member's connections count in the client's stats like a node's.
    const auto stats_now = client.stats();
    CHECK(stats_now.requests > 0);
    CHECK(stats_now.writes > 0);
    CHECK(stats_now.nodes_connected == 1);  // one member, however many connections
}

TEST_CASE("a failover, manual or forced, puts the slots in quarantine: never two holders") {
    for (const bool forced : {false, true}) {
        CAPTURE(forced);
        cluster_member shards{{.shards = 3, .replicas = 1, .node_timeout = 1000ms, .server = {}}};
        redlock::client_config config = members_config({of(shards)});
        // The rule: the quarantine lasts at least the longest TTL in use.
        config.restart_quarantine = 1500ms;
        redlock_test::log_capture log;
        config.logger = log.logger();
        auto alice = redlock_test::create_client(config);
        auto bob = redlock_test::create_client(config);
        REQUIRE(redlock_test::warm_up(alice));
        REQUIRE(redlock_test::warm_up(bob));
        const std::string r = resource_on(shards, 0, "failing:");
        auto held = alice.acquire(r, {.ttl = 1500ms});
        REQUIRE(held);
        if (forced) {
            shards.forced_failover(0);
        } else {
            shards.manual_failover(0);
        }
        // The worst case: the promoted replica never got the key.
        const std::size_t promoted = shards.master_of_slot(redlock::detail::resource_slot(r));
        shards.node(promoted).command({"DEL", lock_key(r)});
        // Bob saw the old map. While Alice's lock may still be valid, he must not get it.
        bool overlapped = false;
        bool granted_later = false;
        const auto give_up = std::chrono::steady_clock::now() + 15s;
        while (std::chrono::steady_clock::now() < give_up && !granted_later) {
            auto l = bob.acquire(r, {.ttl = 1000ms, .attempts = 1});
            if (l) {
                if (std::chrono::steady_clock::now() < held->valid_until()) overlapped = true;
                granted_later = true;
            }
            std::this_thread::sleep_for(50ms);
        }
        CHECK_FALSE(overlapped);
        CHECK(granted_later);  // and once the quarantine is over, the member counts again
        CHECK(log.contains("a failover"));
        // Another master's slots were not touched by the failover and count at once.
        CHECK(bob.acquire(resource_on(shards, 1, "healthy:"), {.ttl = 1s}));
    }
}

TEST_CASE("wait_replicas: a grant the replica has survives a failover, without quarantine") {
    cluster_member shards{{.shards = 3, .replicas = 1, .node_timeout = 1000ms, .server = {}}};
    redlock::client_config config = members_config({of(shards, 1)});
    auto alice = redlock_test::create_client(config);
    REQUIRE(redlock_test::warm_up(alice));
    const std::string r = resource_on(shards, 0, "replicated:");
    auto held = alice.acquire(r, {.ttl = 10s});
    REQUIRE(held);
    shards.manual_failover(0);
    CHECK(shards.get(lock_key(r)) == held->value());  // WAIT confirmed the replica had it
    auto bob = redlock_test::create_client(config);
    REQUIRE(redlock_test::warm_up(bob));
    CHECK_FALSE(bob.acquire(r, {.ttl = 1s}));
    CHECK(alice.extend(*held, 10s));
    CHECK(alice.release(*held));
}

TEST_CASE("a Sentinel failover: the new master is in quarantine, then counts") {
    sentinel_member managed;
    redlock::client_config config = members_config({}, {of(managed)});
    config.restart_quarantine = 1500ms;
    auto client = redlock_test::create_client(config);
    REQUIRE(redlock_test::warm_up(client));
    const std::size_t old_master = managed.master_index();
    managed.failover();
    CHECK(managed.master_index() != old_master);
    // Until the client has followed the switch and the quarantine is over, nothing counts.
    CHECK(redlock_test::wait_until(redlock_test::scaled(10s), [&] {
        auto l = client.acquire("after-switch", {.ttl = 2000ms});
        return l &&
               managed.server(managed.master_index()).get(lock_key("after-switch")) == l->value();
    }));
}

TEST_CASE("a one-node cluster announces its master with an empty host: the seed's host is used") {
    // A node that never met another does not know its own address, and CLUSTER SLOTS names
    // it "" (Redis means: the host you asked). bench/cluster_scaleout.sh builds such members.
    // The fixture announces 127.0.0.1; without it, the node is such a node again.
    cluster_member shards{{.shards = 1, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
    REQUIRE(shards.node(0).command({"CONFIG", "SET", "cluster-announce-ip", ""}) == "OK");
    const auto slots = shards.node(0).query({"CLUSTER", "SLOTS"});
    REQUIRE(slots->elements == 1);
    REQUIRE(slots->element[0]->elements >= 3);
    CHECK(std::string{slots->element[0]->element[2]->element[0]->str} == "");  // as said above
    auto client = redlock_test::create_client(members_config({of(shards)}));
    REQUIRE(redlock_test::warm_up(client));
    auto held = client.acquire("lone:1", {.ttl = 5s});
    REQUIRE(held);
    CHECK(shards.get(lock_key("lone:1")) == held->value());
    const auto health = client.check();
    REQUIRE(health);
    REQUIRE(health->nodes.size() == 1);
    REQUIRE_FALSE(health->nodes[0].topology.empty());
    const std::string master = "master 127.0.0.1:" + std::to_string(shards.node(0).port());
    CHECK(health->nodes[0].topology[0].starts_with(master + ": 16384 slots"));
    CHECK(client.release(*held));
}

TEST_CASE("a straggler sent on by MOVED to a hung master is let go once the lock is decided") {
    // A member's request goes straight on the connection; a MOVED moves it into the member's
    // table, under the number its operation knows. The standalone nodes answer late (their
    // proxies delay them), so the MOVED is followed first; they then decide the acquisition,
    // which disowns the cluster's straggler. Found by that number, it must not keep the
    // operation alive until the hung master answers or request_timeout.
    redlock_test::cluster standalone{2};
    fault_proxy slow_a{standalone[0].port()};
    fault_proxy slow_b{standalone[1].port()};
    cluster_member shards{{.shards = 2, .replicas = 0, .node_timeout = 5000ms, .server = {}}};
    redlock::client_config config =
        redlock_test::fixture_config({slow_a.address(), slow_b.address()});
    redlock::cluster_member member = of(shards);
    member.refresh_interval = 3600s;  // the map stays stale: the slot's move shows by MOVED
    config.clusters = {member};
    config.lock.ttl = 30s;
    config.request_timeout = 20s;
    auto client = redlock_test::create_client(config);
    REQUIRE(redlock_test::warm_up(client));
    const std::string r = resource_on(shards, 0, "straggler:");
    const auto slot = redlock::detail::resource_slot(r);
    shards.move_slot(slot, 1);
    shards.node(1).freeze();
    slow_a.set_latency(150ms);
    slow_b.set_latency(150ms);
    auto held = client.acquire(r, {.ttl = 30s});
    REQUIRE(held);
    // Decided on the standalone nodes; the cluster's request waits on the frozen master.
    CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                   [&] { return client.stats().operations == 0; }));
    shards.node(1).thaw();
    // The late grant lands on the thawed master, and nobody hears of it; the release takes
    // the key off everywhere.
    CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                   [&] { return shards.exists(lock_key(r)); }));
    slow_a.set_latency(0ms);
    slow_b.set_latency(0ms);
    REQUIRE(client.release(*held));
    CHECK(standalone.count_holding(lock_key(r), held->value()) == 0);
    CHECK_FALSE(shards.exists(lock_key(r)));
}

TEST_CASE("locks started inside a cluster member's answer: its request table grows, none is lost") {
    // The first grant's callback runs while the member hands on the answer, and starts
    // `more` acquisitions right there: the member's table of requests grows and moves
    // under that hand-off. It used to write to the old table afterwards (AddressSanitizer:
    // heap-use-after-free; without it, a crash in free() under load).
    cluster_member shards{{.shards = 1, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
    auto client = redlock_test::create_client(members_config({of(shards)}));
    REQUIRE(redlock_test::warm_up(client));
    constexpr int more = 300;
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<redlock::lock> held;
    int failed = 0;
    const auto record = [&](redlock::result<redlock::lock> r) {
        const std::lock_guard guard{mutex};
        if (r) {
            held.push_back(std::move(r).value());
        } else {
            ++failed;
        }
        changed.notify_all();
    };
    client.acquire_async("inline:first", {.ttl = 10s}, [&](redlock::result<redlock::lock> first) {
        for (int i = 0; i < more; ++i)
            client.acquire_async("inline:" + std::to_string(i), {.ttl = 10s}, record);
        record(std::move(first));
    });
    {
        std::unique_lock guard{mutex};
        CHECK(changed.wait_for(guard, 20s,
                               [&] { return static_cast<int>(held.size()) + failed == more + 1; }));
    }
    CHECK(failed == 0);
    CHECK(held.size() == more + 1);
    int released = 0;
    for (const auto& l : held) released += client.release(l) ? 1 : 0;
    CHECK(released == static_cast<int>(held.size()));
    CHECK_FALSE(shards.exists(lock_key("inline:first")));
}

TEST_CASE("members of the wrong kind are refused with a message that names them") {
    redlock_test::redis_server plain;
    {
        // In a block of its own: the client (and its loop thread, still dialling)
        // is gone before the Sentinel's servers start and stop. Otherwise the
        // loop thread's sockets and the servers' teardown share descriptor
        // numbers unsynchronized, which ThreadSanitizer reports.
        redlock::cluster_member seeded_standalone;
        seeded_standalone.seeds = {plain.address()};
        auto client = redlock_test::create_client(members_config({seeded_standalone}));
        auto l = client.acquire("x", {.ttl = 1s});
        REQUIRE_FALSE(l);
        CHECK(to_string(l.error()).find("not in cluster mode") != std::string::npos);
    }

    sentinel_member managed;
    redlock::sentinel_member unknown = of(managed);
    unknown.master_name = "nobody-monitors-this";
    auto other = redlock_test::create_client(members_config({}, {unknown}));
    auto m = other.acquire("x", {.ttl = 1s});
    REQUIRE_FALSE(m);
    CHECK(to_string(m.error()).find("nobody-monitors-this") != std::string::npos);
}

TEST_CASE("a waiter on cluster and Sentinel members is woken by the release, not by its re-check") {
    cluster_member shards{{.shards = 2, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
    sentinel_member managed;
    for (const bool cluster : {true, false}) {
        CAPTURE(cluster);
        redlock::client_config config =
            cluster ? members_config({of(shards)}) : members_config({}, {of(managed)});
        // A re-check only every 5 s: a wake-up within 2 s can only be a notification.
        config.lock.waiter_ttl = 10s;
        auto holder = redlock_test::create_client(config);
        auto waiter = redlock_test::create_client(config);
        REQUIRE(redlock_test::warm_up(holder));
        REQUIRE(redlock_test::warm_up(waiter));
        const std::string r = cluster ? resource_on(shards, 1, "queue:") : "queue:s";
        auto held = holder.acquire(r, {.ttl = 20s});
        REQUIRE(held);
        std::optional<redlock::result<redlock::lock>> got;
        std::mutex m;
        (void)waiter.acquire_async(r, {.ttl = 5s, .max_wait = 15s},
                                   [&](redlock::result<redlock::lock> l) {
                                       std::lock_guard g{m};
                                       got = std::move(l);
                                   });
        // Queued on the member before the release.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] {
            return cluster ? shards.exists("redlock-queue:" + redlock::detail::tagged_resource(r))
                           : managed.server(managed.master_index())
                                 .exists("redlock-queue:" + redlock::detail::tagged_resource(r));
        }));
        // Asleep until its next re-check: no attempt for a while (its first, made
        // before its subscription was confirmed, is followed by a short pause).
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            const auto before = waiter.stats().attempts;
            return before >= 2 && redlock_test::holds_for(
                                      800ms, [&] { return waiter.stats().attempts == before; });
        }));
        REQUIRE(holder.release(*held));
        const auto released = std::chrono::steady_clock::now();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(4s), [&] {
            std::lock_guard g{m};
            return got.has_value();
        }));
        CHECK(std::chrono::steady_clock::now() - released < redlock_test::scaled_within(2s, 4s));
        std::lock_guard g{m};
        REQUIRE(*got);
        CHECK(waiter.release(**got));
    }
}

TEST_CASE("a slot that no node of a cluster serves is named in the failure") {
    cluster_member shards{{.shards = 2, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
    redlock::client_config config = members_config({of(shards)});
    config.retry = {.attempts = 6, .delay = 200ms, .jitter = 0ms};
    auto client = redlock_test::create_client(config);
    REQUIRE(redlock_test::warm_up(client));
    const std::string r = resource_on(shards, 0, "orphan:");
    const std::string slot = std::to_string(redlock::detail::resource_slot(r));
    // Every node forgets who serves the slot: the cluster no longer covers it.
    for (std::size_t i = 0; i < shards.size(); ++i)
        shards.node(i).command({"CLUSTER", "DELSLOTS", slot});
    auto l = client.acquire(r, {.ttl = 1s});
    REQUIRE_FALSE(l);
    CHECK_MESSAGE(to_string(l.error()).find("slot " + slot + " is served by no node of cluster") !=
                      std::string::npos,
                  to_string(l.error()));
}
