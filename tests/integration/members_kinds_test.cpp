// Everything else works on every member kind: the lock kinds (exclusive with fencing, readers
// and writers, a semaphore, reentrancy), extend with its repair of a member that lost the key,
// client::status and client::check, on three Redis Cluster members and on a mixed quorum of a
// standalone master, a cluster and a Sentinel-managed master (support/member_deployment), all
// real servers. Waiting, the hand-off and renewal are in members_waiting_test.cpp.

#include "support/cluster.hpp"
#include "support/lock_kinds.hpp"
#include "support/member_deployment.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <future>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::deployment_kind;
using redlock_test::lock_key_of;
using redlock_test::member_deployment;
using redlock_test::scaled;
using redlock_test::wait_until;

namespace {

/// Until every member holds `value` at `key`: a lock is handed out at a majority, and the last
/// member's grant may still be on its way.
auto held_everywhere(const member_deployment& d, const std::string& key, const std::string& value)
    -> bool {
    return wait_until(scaled(3s), [&] { return d.holding(key, value) == 3; });
}

auto waiting_acquire(redlock::client& c, const std::string& resource, redlock::lock_options o)
    -> std::future<redlock::result<redlock::lock>> {
    auto done = std::make_shared<std::promise<redlock::result<redlock::lock>>>();
    auto future = done->get_future();
    c.acquire_async(resource, std::move(o),
                    [done](redlock::result<redlock::lock> r) { done->set_value(std::move(r)); });
    return future;
}

auto fenced_options() -> redlock::lock_options {
    redlock::lock_options o = redlock_test::writer_options(5000ms);
    o.fencing = true;
    return o;
}

void exclusive_with_fencing(const member_deployment& d, redlock::client& alice,
                            redlock::client& bob, redlock::client& carol) {
    const std::string r = "fenced";
    auto first = alice.acquire(r, fenced_options());
    REQUIRE(first);
    REQUIRE(first->fence());
    CHECK(held_everywhere(d, lock_key_of(r), first->value()));
    auto refused = bob.acquire(r, fenced_options());
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == redlock::errc::contended);
    REQUIRE(alice.release(*first));
    auto second = bob.acquire(r, fenced_options());
    REQUIRE(second);
    REQUIRE(second->fence());
    CHECK(*second->fence() > *first->fence());
    REQUIRE(bob.release(*second));
    auto third = carol.acquire(r, fenced_options());
    REQUIRE(third);
    REQUIRE(third->fence());
    CHECK(*third->fence() > *second->fence());
    // The token came from the members' counters: a majority know it.
    int knowing = 0;
    const std::string fence_key = redlock_test::fence_key_of(r);
    for (std::size_t m = 0; m < d.size(); ++m)
        knowing += d.get(m, fence_key) == std::to_string(*third->fence()) ? 1 : 0;
    CHECK(knowing >= 2);
    REQUIRE(carol.release(*third));
    CHECK(wait_until(scaled(2s), [&] { return d.with_key(lock_key_of(r)) == 0; }));
    // A reader with fencing gets the current token, the last writer's.
    redlock::lock_options fenced_reader = redlock_test::reader_options(5000ms);
    fenced_reader.fencing = true;
    auto reader = alice.acquire(r, fenced_reader);
    REQUIRE(reader);
    CHECK(reader->fence() == third->fence());
    REQUIRE(alice.release(*reader));
}

/// acquire_all over resources that share a hash tag: one slot, so one master of each cluster.
void one_slot_set(const member_deployment& d, redlock::client& alice, redlock::client& bob) {
    const std::vector<std::string> set{"{order:7}:items", "{order:7}:payments"};
    auto both = alice.acquire_all(set, redlock_test::writer_options(5000ms));
    REQUIRE(both);
    for (const auto& r : set) CHECK(held_everywhere(d, lock_key_of(r), both->value()));
    CHECK_FALSE(bob.acquire(set[1], redlock_test::writer_options()));
    auto extended = alice.extend(*both, 10s);
    REQUIRE(extended);
    CHECK(*extended > 5s);
    REQUIRE(alice.release(*both));
    for (const auto& r : set)
        CHECK(wait_until(scaled(2s), [&] { return d.with_key(lock_key_of(r)) == 0; }));
}

void readers_and_writer(const member_deployment& d, redlock::client& alice, redlock::client& bob,
                        redlock::client& carol) {
    const std::string r = "document";
    auto ra = alice.acquire(r, redlock_test::reader_options(5000ms));
    auto rb = bob.acquire(r, redlock_test::reader_options(5000ms));
    REQUIRE(ra);
    REQUIRE(rb);  // two readers together
    CHECK(ra->kind() == redlock::lock_kind::shared);
    CHECK(held_everywhere(d, lock_key_of(r), "~readers"));
    auto excluded = carol.acquire(r, redlock_test::writer_options(5000ms));
    REQUIRE_FALSE(excluded);
    CHECK(excluded.error().code == redlock::errc::contended);

    auto writer =
        waiting_acquire(carol, r, redlock_test::waiting(redlock_test::writer_options(5000ms), 15s));
    REQUIRE(alice.release(*ra));
    // One reader is still in: the writer waits.
    CHECK(writer.wait_for(300ms) == std::future_status::timeout);
    REQUIRE(bob.release(*rb));
    REQUIRE(writer.wait_for(redlock_test::scaled(15s)) == std::future_status::ready);
    auto wrote = writer.get();
    REQUIRE(wrote);
    CHECK(wrote->kind() == redlock::lock_kind::exclusive);
    // A majority, not every member: woken by the first release it heard of, the writer may
    // ask a member where the last reader's release has not landed yet; that one refuses.
    CHECK(d.holding(lock_key_of(r), wrote->value()) >= 2);
    CHECK_FALSE(alice.acquire(r, redlock_test::reader_options()));  // the writer excludes readers
    REQUIRE(carol.release(*wrote));
}

void semaphore_of_two(const member_deployment& d, redlock::client& alice, redlock::client& bob,
                      redlock::client& carol) {
    const std::string r = "pool";
    auto p1 = alice.acquire(r, redlock_test::permit_options(2));
    auto p2 = bob.acquire(r, redlock_test::permit_options(2));
    REQUIRE(p1);
    REQUIRE(p2);
    REQUIRE(p1->permit());
    REQUIRE(p2->permit());
    CHECK(*p1->permit() != *p2->permit());
    CHECK(held_everywhere(d, lock_key_of(r) + "|permit|" + std::to_string(*p1->permit()),
                          p1->value()));
    auto third = carol.acquire(r, redlock_test::permit_options(2));
    REQUIRE_FALSE(third);
    CHECK(third.error().code == redlock::errc::contended);

    // The third waits, and gets the permit the first gives back.
    auto waiting =
        waiting_acquire(carol, r, redlock_test::waiting(redlock_test::permit_options(2), 15s));
    CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
    REQUIRE(alice.release(*p1));
    REQUIRE(waiting.wait_for(redlock_test::scaled(15s)) == std::future_status::ready);
    auto got = waiting.get();
    REQUIRE(got);
    CHECK(got->permit() == p1->permit());
    REQUIRE(bob.release(*p2));
    REQUIRE(carol.release(*got));
}

void reentrant(const member_deployment& d, redlock::client& alice, redlock::client& bob) {
    const std::string r = "job";
    redlock::lock_options mine = redlock_test::writer_options(5000ms);
    mine.owner = "job-7";
    auto first = alice.acquire(r, mine);
    REQUIRE(first);
    auto again = alice.acquire(r, mine);
    REQUIRE(again);
    CHECK(again->value() == first->value());
    CHECK(again->holds() == 2);
    // The same owner name on another client is another holder.
    CHECK_FALSE(bob.acquire(r, mine));
    auto once = alice.release(*again);
    REQUIRE(once);
    CHECK(once->holds_left == 1);
    CHECK(d.holding(lock_key_of(r), first->value()) == 3);  // nothing was sent
    auto last = alice.release(*first);
    REQUIRE(last);
    CHECK(last->holds_left == 0);
    CHECK(last->majority());
    CHECK(wait_until(scaled(2s), [&] { return d.with_key(lock_key_of(r)) == 0; }));
}

void lock_kinds(deployment_kind kind) {
    const member_deployment d{kind};
    CAPTURE(d.name());
    auto alice = redlock_test::create_client(d.config());
    auto bob = redlock_test::create_client(d.config());
    auto carol = redlock_test::create_client(d.config());
    REQUIRE(redlock_test::warm_up(alice));
    REQUIRE(redlock_test::warm_up(bob));
    REQUIRE(redlock_test::warm_up(carol));
    CHECK(alice.node_count() == 3);
    exclusive_with_fencing(d, alice, bob, carol);
    readers_and_writer(d, alice, bob, carol);
    semaphore_of_two(d, alice, bob, carol);
    reentrant(d, alice, bob);
    one_slot_set(d, alice, bob);
}

/// Deletes the key in `member`, then extends: the member gets its key back.
void extend_repairs(const member_deployment& d, redlock::client& alice, const redlock::lock& held,
                    std::size_t member) {
    CAPTURE(member);
    const std::string key = lock_key_of(held.resource());
    REQUIRE(held_everywhere(d, key, held.value()));
    REQUIRE(d.command(member, key, {"DEL", key}) == "1");
    auto extended = alice.extend(held, 10s);
    REQUIRE(extended);
    CHECK(*extended > 5s);
    CHECK(wait_until(scaled(2s), [&] { return d.get(member, key) == held.value(); }));
    CHECK(std::stoll(d.command(member, key, {"PTTL", key}).value_or("-2")) > 5000);
}

void extend_status_check(deployment_kind kind) {
    const member_deployment d{kind};
    CAPTURE(d.name());
    auto alice = redlock_test::create_client(d.config());
    auto bob = redlock_test::create_client(d.config());
    REQUIRE(redlock_test::warm_up(alice));
    REQUIRE(redlock_test::warm_up(bob));

    // extend, and its repair of a member whose master lost the key.
    const std::string r = "orders:42";
    auto held = alice.acquire(r, fenced_options());
    REQUIRE(held);
    extend_repairs(d, alice, *held, d.a_cluster());
    if (kind == deployment_kind::mixed) extend_repairs(d, alice, *held, 2);  // the Sentinel's

    // A reader and a permit are repaired too: the reader re-admitted, the permit's key set.
    const std::size_t c = d.a_cluster();
    auto reader = bob.acquire("report", redlock_test::reader_options(3000ms));
    REQUIRE(reader);
    const std::string report_key = lock_key_of("report");
    REQUIRE(held_everywhere(d, report_key, "~readers"));
    REQUIRE(d.command(c, report_key, {"DEL", report_key, report_key + "|readers"}) == "2");
    REQUIRE(bob.extend(*reader, 10s));
    CHECK(wait_until(scaled(2s), [&] {
        return redlock_test::reader_ms_left(d.server_for(c, report_key), report_key,
                                            reader->value()) > 5000;
    }));
    auto readers_seen = alice.status("report");
    REQUIRE(readers_seen);
    CHECK(readers_seen->shared());
    CHECK(readers_seen->majority_readers == std::vector{reader->value()});
    REQUIRE(bob.release(*reader));
    auto leased = bob.acquire("leases", redlock_test::permit_options(2));
    REQUIRE(leased);
    const std::string permit_key =
        lock_key_of("leases") + "|permit|" + std::to_string(leased->permit().value_or(-1));
    REQUIRE(held_everywhere(d, permit_key, leased->value()));
    REQUIRE(d.command(c, permit_key, {"DEL", permit_key}) == "1");
    REQUIRE(bob.extend(*leased, 10s));
    CHECK(wait_until(scaled(2s), [&] { return d.get(c, permit_key) == leased->value(); }));
    REQUIRE(bob.release(*leased));

    // status: every member's view, and the holder a majority agree on.
    auto seen = bob.status(r);
    REQUIRE(seen);
    CHECK(seen->quorum == 2);
    REQUIRE(seen->nodes.size() == 3);
    CHECK(seen->majority_holder == held->value());
    CHECK(seen->fence == held->fence());
    for (const auto& n : seen->nodes) {
        CAPTURE(n.node);
        CHECK(n.reachable);
        CHECK(n.holder == held->value());
        CHECK((n.ttl && *n.ttl > 1s));
    }
    REQUIRE(alice.release(*held));

    // status of a semaphore: two of three permits held.
    auto p1 = alice.acquire("gpus", redlock_test::permit_options(3));
    auto p2 = bob.acquire("gpus", redlock_test::permit_options(3));
    REQUIRE(p1);
    REQUIRE(p2);
    auto pool = bob.status("gpus", 3);
    REQUIRE(pool);
    CHECK(pool->held() == 2);
    REQUIRE(pool->nodes.size() == 3);
    for (const auto& n : pool->nodes) CHECK(n.permits == 3);
    REQUIRE(pool->permit_holders.size() == 3);
    CHECK(pool->permit_holders.at(static_cast<std::size_t>(*p1->permit())).majority_holder ==
          p1->value());
    REQUIRE(alice.release(*p1));
    REQUIRE(bob.release(*p2));

    // check: every member reachable; a routed member's topology lines.
    auto health = alice.check();
    REQUIRE(health);
    REQUIRE(health->nodes.size() == 3);
    CHECK(health->quorum_reachable());
    for (std::size_t m = 0; m < 3; ++m) {
        const auto& n = health->nodes[m];
        CAPTURE(n.node);
        CHECK(n.reachable);
        CHECK(n.role == "master");
        CHECK(n.topology.empty() == !d.routed(m));
    }
    const auto& shards = health->nodes[d.a_cluster()];
    CHECK(shards.node.starts_with("cluster "));
    REQUIRE(shards.topology.size() >= 2);  // two masters and their slots
    CHECK(shards.topology[0].find("slots") != std::string::npos);
    if (kind == deployment_kind::mixed) {
        REQUIRE_FALSE(health->nodes[2].topology.empty());
        CHECK(health->nodes[2].topology[0].find("redlock-m") != std::string::npos);
    }
}

}  // namespace

TEST_SUITE("members") {
    TEST_CASE(
        "three cluster members: exclusive with fencing, readers and writers, a semaphore, "
        "reentrancy") {
        lock_kinds(deployment_kind::three_clusters);
    }

    TEST_CASE(
        "standalone, cluster and Sentinel members: exclusive with fencing, readers and "
        "writers, a semaphore, reentrancy") {
        lock_kinds(deployment_kind::mixed);
    }

    TEST_CASE("three cluster members: extend repairs a slot's master, status and check") {
        extend_status_check(deployment_kind::three_clusters);
    }

    TEST_CASE("standalone, cluster and Sentinel members: extend repairs, status and check") {
        extend_status_check(deployment_kind::mixed);
    }
}
