// Read-write locks on the quorum: readers share, a writer (an exclusive lock)
// excludes them, a queued writer stops new readers, a release wakes the next
// writer or the readers queued before it, and a crashed reader blocks nobody
// for longer than its own TTL. Against five real redis-server processes.
#include "support/cluster.hpp"
#include "support/lock_kinds.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::scaled;
using redlock_test::wait_until;
using steady = std::chrono::steady_clock;

using redlock_test::waiting;

namespace {
auto reader(std::chrono::milliseconds ttl = 2000ms) -> redlock::lock_options {
    return redlock_test::reader_options(ttl);
}
auto writer() -> redlock::lock_options {
    return redlock_test::writer_options();
}
}  // namespace

TEST_CASE("readers share a resource, a writer is refused while any reader holds, and holds after") {
    cluster nodes;
    auto a = nodes.make_client();
    auto b = nodes.make_client();

    auto r1 = a.acquire("doc", reader());
    REQUIRE(r1);
    CHECK(r1->kind() == redlock::lock_kind::shared);
    auto r2 = b.acquire("doc", reader());
    REQUIRE(r2);
    CHECK(r1->value() != r2->value());

    auto w = b.acquire("doc", writer());
    REQUIRE_FALSE(w);
    CHECK(w.error().code == redlock::errc::contended);

    REQUIRE(a.release(*r1));
    CHECK_FALSE(b.acquire("doc", writer()));  // r2 still reads
    const auto last = b.release(*r2);
    REQUIRE(last);
    CHECK(last->majority());

    auto w2 = a.acquire("doc", writer());
    REQUIRE(w2);
    CHECK(w2->kind() == redlock::lock_kind::exclusive);
    auto r3 = b.acquire("doc", reader());
    REQUIRE_FALSE(r3);  // a writer excludes readers
    CHECK(r3.error().code == redlock::errc::contended);
    REQUIRE(a.release(*w2));
    CHECK(wait_until(scaled(5s), [&] { return nodes.total_keys() == 0; }));
}

TEST_CASE("a reader's extend and release touch only its own hold") {
    cluster nodes;
    auto c = nodes.make_client();
    auto r1 = c.acquire("doc", reader(1000ms));
    auto r2 = c.acquire("doc", reader(1000ms));
    REQUIRE(r1);
    REQUIRE(r2);
    const auto extended = c.extend(*r1, 5000ms);
    REQUIRE(extended);
    CHECK(*extended > 4000ms);
    // The reader set's marker lives as long as the longest reader (on every
    // node once the extends still in flight after the majority have landed).
    CHECK(wait_until(scaled(5s), [&] {
        for (auto& server : nodes) {
            if (std::stoll(server.command({"PTTL", nodes.key_of("doc")}).value_or("-2")) <= 3000)
                return false;
        }
        return true;
    }));
    REQUIRE(c.release(*r2));
    CHECK_FALSE(c.acquire("doc", writer()));  // r1 still holds
    // A reader released twice deletes nothing the second time.
    const auto again = c.release(*r2);
    REQUIRE(again);
    CHECK(again->deleted == 0);
    REQUIRE(c.release(*r1));
    CHECK(c.acquire("doc", writer()));
}

TEST_CASE("a crashed reader blocks a writer only until its own TTL ends") {
    cluster nodes;
    auto c = nodes.make_client();
    auto crashed = c.acquire("doc", reader(600ms));  // never released
    REQUIRE(crashed);
    auto other = c.acquire("doc", reader(5000ms));
    REQUIRE(other);
    REQUIRE(c.release(*other));
    // The longer-lived reader left: the marker shrank to the crashed reader's TTL.
    CHECK_FALSE(c.acquire("doc", writer()));
    const auto start = steady::now();
    auto w = c.acquire("doc", waiting(writer(), 5000ms));
    REQUIRE(w);
    CHECK(steady::now() - start < redlock_test::scaled_within(3000ms, 4500ms));
}

TEST_CASE(
    "a queued writer stops new readers (writer-preferring), and its turn comes when the readers "
    "leave") {
    cluster nodes;
    auto c = nodes.make_client();
    auto r1 = c.acquire("doc", reader(10000ms));
    REQUIRE(r1);

    // The writer waits: the readers hold.
    auto writer_done =
        std::async(std::launch::async, [&] { return c.acquire("doc", waiting(writer(), 8000ms)); });
    // Queued on a majority once its first attempt was refused there.
    REQUIRE(wait_until(scaled(5s), [&] {
        int queued = 0;
        for (auto& server : nodes) {
            queued += std::stoi(server.command({"ZCARD", "redlock-queue:{doc}"}).value_or("0"));
        }
        return queued >= 3;
    }));
    auto late_reader = c.acquire("doc", reader());
    REQUIRE_FALSE(late_reader);
    CHECK(late_reader.error().code == redlock::errc::contended);

    const auto released_at = steady::now();
    REQUIRE(c.release(*r1));
    auto w = writer_done.get();
    REQUIRE(w);
    // Woken by the release, not by its sleep running out (the reader's TTL was 10 s).
    CHECK(steady::now() - released_at < redlock_test::scaled_within(2000ms, 6000ms));
    REQUIRE(c.release(*w));
}

TEST_CASE("a writer's release wakes every reader queued before the next writer") {
    cluster nodes;
    auto c = nodes.make_client();
    auto w = c.acquire("doc", [] {
        redlock::lock_options o;
        o.ttl = 20000ms;
        return o;
    }());
    REQUIRE(w);

    std::vector<std::future<redlock::result<redlock::lock>>> readers;
    for (int i = 0; i < 3; ++i) {
        readers.push_back(std::async(std::launch::async, [&] {
            return c.acquire("doc", waiting(reader(5000ms), 10000ms));
        }));
    }
    REQUIRE(wait_until(scaled(5s), [&] { return c.stats().waiters == 3; }));
    const auto released_at = steady::now();
    REQUIRE(c.release(*w));
    std::vector<redlock::lock> held;
    for (auto& r : readers) {
        auto got = r.get();
        REQUIRE(got);
        held.push_back(*got);
    }
    // All three together, long before the writer's 20 s TTL.
    CHECK(steady::now() - released_at < redlock_test::scaled_within(3000ms, 8000ms));
    for (const auto& l : held) CHECK(l.valid());
    for (const auto& l : held) REQUIRE(c.release(l));
    CHECK(wait_until(scaled(5s), [&] { return nodes.total_keys() == 0; }));
}

TEST_CASE("a reader with fencing reads the current token: that of the last writer, or higher") {
    cluster nodes;
    auto c = nodes.make_client();
    redlock::lock_options fenced;
    fenced.fencing = true;
    auto w = c.acquire("doc", fenced);
    REQUIRE(w);
    REQUIRE(w->fence());
    const auto token = *w->fence();
    REQUIRE(c.release(*w));
    auto r = c.acquire("doc", [] {
        auto o = reader();
        o.fencing = true;
        return o;
    }());
    REQUIRE(r);
    REQUIRE(r->fence());
    CHECK(*r->fence() >= token);
    REQUIRE(c.release(*r));
    // A reader does not raise the counter: the next writer's token is token + 1.
    auto w2 = c.acquire("doc", fenced);
    REQUIRE(w2);
    CHECK(*w2->fence() == token + 1);
}

TEST_CASE("invalid lock kind options are named") {
    cluster nodes;
    auto c = nodes.make_client();
    auto o = reader();
    auto two = c.acquire_all({"a", "b"}, o);
    REQUIRE_FALSE(two);
    CHECK(two.error().code == redlock::errc::invalid_argument);
    CHECK(two.error().message.find("shared lock covers a single resource") != std::string::npos);
    o.permits = 3;
    auto both = c.acquire("a", o);
    REQUIRE_FALSE(both);
    CHECK(both.error().message.find("either shared or a permit") != std::string::npos);
    redlock::lock_options zero;
    zero.permits = 0;
    auto none = c.acquire("a", zero);
    REQUIRE_FALSE(none);
    CHECK(none.error().message.find("permits must be between 1 and 1024") != std::string::npos);
    redlock::lock_options empty_owner;
    empty_owner.owner = "";
    auto anon = c.acquire("a", empty_owner);
    REQUIRE_FALSE(anon);
    CHECK(anon.error().message.find("owner must not be empty") != std::string::npos);
}

TEST_CASE(
    "grants follow the queue: readers queued before a writer go first, a reader behind it waits") {
    cluster nodes;
    auto c = nodes.make_client();
    auto first = c.acquire("doc", [] {
        redlock::lock_options o;
        o.ttl = 20000ms;
        return o;
    }());
    REQUIRE(first);

    std::atomic<int> next{0};
    auto contender = [&](bool shared, int* position) {
        auto o = waiting(shared ? reader(5000ms) : writer(), 15000ms);
        o.ttl = 5000ms;
        auto got = c.acquire("doc", o);
        if (!got) return false;
        *position = next++;
        std::this_thread::sleep_for(100ms);  // the critical section
        return static_cast<bool>(c.release(*got));
    };
    int r1 = -1;
    int w2 = -1;
    int r3 = -1;
    auto a = std::async(std::launch::async, contender, true, &r1);
    REQUIRE(wait_until(scaled(5s), [&] { return c.stats().waiters == 1; }));
    auto b = std::async(std::launch::async, contender, false, &w2);
    REQUIRE(wait_until(scaled(5s), [&] { return c.stats().waiters == 2; }));
    auto d = std::async(std::launch::async, contender, true, &r3);
    REQUIRE(wait_until(scaled(5s), [&] { return c.stats().waiters == 3; }));

    REQUIRE(c.release(*first));
    CHECK(a.get());
    CHECK(b.get());
    CHECK(d.get());
    CHECK(r1 == 0);
    CHECK(w2 == 1);  // the reader behind the writer did not overtake it
    CHECK(r3 == 2);
}
