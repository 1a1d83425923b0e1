// Counting semaphores and reentrant holds on the quorum, against five real
// redis-server processes: at most K permits held, a permit freed by value, a
// waiter woken by a release, a count disagreement named; an owner re-entering
// what it holds, released on the nodes with its last hold.
#include "support/cluster.hpp"
#include "support/lock_kinds.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <future>
#include <set>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::scaled;
using redlock_test::wait_until;
using steady = std::chrono::steady_clock;

namespace {
auto permits(int k) -> redlock::lock_options {
    return redlock_test::permit_options(k);
}
}  // namespace

TEST_CASE(
    "a semaphore of 3 admits 3 holders on distinct permits, refuses a 4th, and takes one back") {
    cluster nodes;
    auto a = nodes.make_client();
    auto b = nodes.make_client();
    std::vector<redlock::lock> held;
    std::set<int> used;
    for (int i = 0; i < 3; ++i) {
        auto got = (i % 2 == 0 ? a : b).acquire("pool", permits(3));
        REQUIRE(got);
        CHECK(got->kind() == redlock::lock_kind::permit);
        REQUIRE(got->permit());
        CHECK(got->permits() == 3);
        used.insert(*got->permit());
        held.push_back(*got);
    }
    CHECK(used.size() == 3);
    auto fourth = a.acquire("pool", permits(3));
    REQUIRE_FALSE(fourth);
    CHECK(fourth.error().code == redlock::errc::contended);

    // Each lease holds its permit on a majority at least (acquire returns at a
    // majority; a node that ran a rival's grant first may hold none there) ...
    const auto permit_key = [&](int p) {
        return nodes.key_of("pool") + "|permit|" + std::to_string(p);
    };
    for (const auto& l : held) CHECK(nodes.count_holding(permit_key(*l.permit()), l.value()) >= 3);
    // ... and, once its stray releases have landed, no other permit anywhere.
    CHECK(wait_until(scaled(5s), [&] {
        for (const auto& l : held) {
            for (int p = 0; p < 3; ++p) {
                if (p != *l.permit() && nodes.count_holding(permit_key(p), l.value()) > 0)
                    return false;
            }
        }
        return true;
    }));

    REQUIRE(b.release(held[1]));
    auto again = a.acquire("pool", permits(3));
    REQUIRE(again);
    CHECK(*again->permit() == *held[1].permit());
    const auto extended = a.extend(*again, 4000ms);
    REQUIRE(extended);
    CHECK(*extended > 3000ms);
    for (const auto& l : {held[0], held[2], *again}) REQUIRE(a.release(l));
}

TEST_CASE("a permit adopted by its value alone is found on each node, extended and released") {
    cluster nodes;
    auto c = nodes.make_client();
    auto got = c.acquire("pool", permits(2));
    REQUIRE(got);
    const auto adopted = c.adopt("pool", got->value(), redlock::lock_kind::permit, 2);
    const auto extended = c.extend(adopted, 5000ms);
    REQUIRE(extended);
    const auto report = c.release(adopted);
    REQUIRE(report);
    CHECK(report->majority());  // found by its value on each node
    CHECK(report->deleted + report->pending == 5);
}

TEST_CASE("a waiter for a full semaphore is woken by a release") {
    cluster nodes;
    auto c = nodes.make_client();
    auto first = c.acquire("pool", [] {
        auto o = permits(1);
        o.ttl = 20000ms;
        return o;
    }());
    REQUIRE(first);
    auto waiter = std::async(std::launch::async, [&] {
        auto o = permits(1);
        o.attempts.reset();
        o.max_wait = 10000ms;
        return c.acquire("pool", o);
    });
    REQUIRE(wait_until(scaled(5s), [&] { return c.stats().waiters == 1; }));
    const auto released_at = steady::now();
    REQUIRE(c.release(*first));
    auto second = waiter.get();
    REQUIRE(second);
    CHECK(steady::now() - released_at < redlock_test::scaled_within(3000ms, 8000ms));
    REQUIRE(c.release(*second));
}

TEST_CASE("users that disagree on the permit count get invalid_argument naming both counts") {
    cluster nodes;
    auto c = nodes.make_client();
    auto three = c.acquire("pool", permits(3));
    REQUIRE(three);
    auto four = c.acquire("pool", [] {
        auto o = permits(4);
        o.attempts = 5;
        return o;
    }());
    REQUIRE_FALSE(four);
    CHECK(four.error().code == redlock::errc::invalid_argument);
    CHECK(four.error().attempts == 1);  // not retried
    CHECK(four.error().message.find("with 3 permits, not 4") != std::string::npos);
    REQUIRE(c.release(*three));
}

TEST_CASE(
    "a reentrant owner gets the lock it holds again, the nodes release it with the last hold") {
    cluster nodes;
    auto a = nodes.make_client();
    auto b = nodes.make_client();
    redlock::lock_options mine;
    mine.owner = "job-7";
    mine.attempts = 1;

    auto outer = a.acquire("orders", mine);
    REQUIRE(outer);
    CHECK(outer->holds() == 1);
    auto inner = a.acquire("orders", mine);
    REQUIRE(inner);
    CHECK(inner->value() == outer->value());
    CHECK(outer->holds() == 2);
    CHECK(outer->owner() == "job-7");

    // Another owner, or the same name on another client, contends.
    redlock::lock_options theirs = mine;
    theirs.owner = "job-8";
    CHECK_FALSE(a.acquire("orders", theirs));
    CHECK_FALSE(b.acquire("orders", mine));

    const auto first = a.release(*inner);
    REQUIRE(first);
    CHECK(first->holds_left == 1);
    CHECK(first->deleted == 0);
    CHECK(outer->valid());
    CHECK(nodes.held_everywhere("orders", outer->value()));  // nothing was released

    const auto last = a.release(*outer);
    REQUIRE(last);
    CHECK(last->holds_left == 0);
    CHECK(last->majority());
    CHECK_FALSE(outer->valid());
    // Released to zero: a new acquisition is a new lock.
    auto fresh = a.acquire("orders", mine);
    REQUIRE(fresh);
    CHECK(fresh->value() != outer->value());
    CHECK(fresh->holds() == 1);
    REQUIRE(a.release(*fresh));
}

TEST_CASE("concurrent acquisitions by one owner: the second waits for the first and re-enters it") {
    cluster nodes;
    auto c = nodes.make_client();
    redlock::lock_options mine;
    mine.owner = "worker";
    mine.shared = true;
    std::promise<redlock::result<redlock::lock>> p1;
    std::promise<redlock::result<redlock::lock>> p2;
    c.acquire_async("doc", mine, [&](redlock::result<redlock::lock> r) { p1.set_value(r); });
    c.acquire_async("doc", mine, [&](redlock::result<redlock::lock> r) { p2.set_value(r); });
    auto one = p1.get_future().get();
    auto two = p2.get_future().get();
    REQUIRE(one);
    REQUIRE(two);
    CHECK(one->value() == two->value());
    CHECK(one->holds() == 2);
    CHECK(c.stats().attempts == 1);
    REQUIRE(c.release(*one));
    REQUIRE(c.release(*two));
    CHECK(wait_until(scaled(5s), [&] { return nodes.total_keys() == 0; }));
}

TEST_CASE("an acquisition waiting for its owner's acquisition in flight can be cancelled") {
    cluster nodes;
    auto holder = nodes.make_client();
    auto c = nodes.make_client();
    auto taken = holder.acquire("orders");
    REQUIRE(taken);
    redlock::lock_options mine;
    mine.owner = "job";
    mine.max_wait = 10000ms;  // the first waits for `holder`
    std::promise<redlock::result<redlock::lock>> p1;
    std::promise<redlock::result<redlock::lock>> p2;
    c.acquire_async("orders", mine, [&](redlock::result<redlock::lock> r) { p1.set_value(r); });
    const auto second =
        c.acquire_async("orders", mine, [&](redlock::result<redlock::lock> r) { p2.set_value(r); });
    REQUIRE(wait_until(scaled(5s), [&] { return c.stats().waiters == 1; }));
    const auto cancelled_at = steady::now();
    c.cancel(second);
    auto two = p2.get_future().get();
    REQUIRE_FALSE(two);
    CHECK(two.error().code == redlock::errc::cancelled);
    CHECK(two.error().message.find("its owner's acquisition in flight") != std::string::npos);
    CHECK(steady::now() - cancelled_at < redlock_test::scaled_within(2000ms, 8000ms));
    REQUIRE(holder.release(*taken));
    auto one = p1.get_future().get();
    REQUIRE(one);
    CHECK(one->holds() == 1);
    REQUIRE(c.release(*one));
}

TEST_CASE("a permit that is never released frees itself when its TTL ends") {
    cluster nodes;
    auto crashed = nodes.make_client();
    auto c = nodes.make_client();
    auto o = permits(1);
    o.ttl = 600ms;
    auto lease = crashed.acquire("pool", o);
    REQUIRE(lease);
    crashed.shutdown();  // its lease stays on the nodes until the TTL ends
    auto waiting = permits(1);
    waiting.attempts.reset();
    waiting.max_wait = 5000ms;
    const auto start = steady::now();
    auto next = c.acquire("pool", waiting);
    REQUIRE(next);
    CHECK(steady::now() - start < redlock_test::scaled_within(3000ms, 4500ms));
    REQUIRE(c.release(*next));
}
