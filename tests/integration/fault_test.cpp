#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <optional>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::elapsed_since;

namespace {}  // namespace

// Faults are real: SIGKILL (a node vanishes with its keys) and SIGSTOP (a node hangs with its
// socket open). Every case thaws what it froze before it queries the servers.
TEST_SUITE("faults") {
    TEST_CASE_FIXTURE(cluster, "two crashed nodes out of five do not prevent acquisition") {
        node(0).crash();
        node(1).crash();
        auto locks = make_client();

        auto held = locks.acquire("orders:42");

        REQUIRE(held);
        CHECK(held->valid());
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return count_holding(key_of("orders:42")) == 3; }));
    }

    TEST_CASE_FIXTURE(
        cluster, "with three crashed nodes acquisition fails and leaves no key on the survivors") {
        for (int i : {0, 1, 2}) node(i).crash();
        auto locks = make_client();

        auto held = locks.acquire("orders:42");

        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::quorum_unreachable);
        CHECK(held.error().attempts == 3);
        // Released on every node before the call completed: no waiting here.
        CHECK(count_holding(key_of("orders:42")) == 0);
    }

    TEST_CASE_FIXTURE(cluster,
                      "one frozen node does not delay acquisition beyond the request timeout") {
        auto locks = make_client();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        node(2).freeze();
        auto start = std::chrono::steady_clock::now();

        auto held = locks.acquire("orders:42");

        auto took = elapsed_since(start);
        node(2).thaw();
        REQUIRE(held);
        CHECK(held->valid());
        CHECK(took < redlock_test::scaled(1000ms));
    }

    TEST_CASE_FIXTURE(cluster,
                      "a decided acquisition does not wait for a frozen node's reply, and the "
                      "release still deletes what that node granted late") {
        auto settings = config();
        settings.request_timeout = 5s;  // the frozen node's request stays open throughout
        settings.lock.ttl = 10s;
        auto locks = make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        node(4).freeze();
        const auto key = key_of("orders:43");

        auto held = locks.acquire("orders:43");

        REQUIRE(held);
        // Decided on a majority: the frozen node's request is disowned, so nothing stays
        // alive for it (until request_timeout, 5 s, it would keep the acquisition alive).
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return locks.stats().operations == 0; }));
        CHECK(count_holding(key, held->value()) == 4);
        node(4).thaw();
        // The frozen node now runs the SET it had buffered; its reply is read and dropped.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return count_holding(key, held->value()) == 5; }));
        auto released = locks.release(*held);
        REQUIRE(released);
        CHECK(released->deleted + released->pending == 5);  // a slow node may be pending
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key) == 0; }));
        CHECK(locks.stats().timeouts == 0);
    }

    TEST_CASE_FIXTURE(
        cluster,
        "three frozen nodes make acquisition fail quickly, and their late SETs are released") {
        // A TTL far beyond the waits below: a key that disappears was released, not expired.
        auto settings = config();
        settings.lock.ttl = 20s;
        auto locks = make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        for (int i : {0, 1, 2}) node(i).freeze();
        auto key = key_of("orders:42");
        auto start = std::chrono::steady_clock::now();

        auto held = locks.acquire("orders:42");

        auto took = elapsed_since(start);
        for (int i : {0, 1, 2}) node(i).thaw();
        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::quorum_unreachable);
        CHECK(took < redlock_test::scaled(1500ms));
        // Each release was queued behind its SET on the frozen node's connection, so once the
        // node catches up it deletes what it just wrote. The TTL is 20 s: a key that is gone
        // and does not reappear was released, not expired.
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return count_holding(key) == 0; }));
        CHECK(redlock_test::holds_for(300ms, [&] { return count_holding(key) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster,
                      "destroying a client completes an acquisition in flight exactly once") {
        std::atomic<int> completions{0};
        std::atomic<bool> succeeded{false};
        std::atomic<int> code{0};
        std::optional<redlock::client> locks{make_client()};
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks->stats().nodes_connected == 5; }));
        for (auto& server : *this) server.freeze();
        redlock::lock_options patient;
        patient.max_wait = 60s;
        locks->acquire_async("orders:42", patient, [&](redlock::result<redlock::lock> outcome) {
            succeeded = outcome.has_value();
            if (!outcome) code = outcome.error().code.value();
            ++completions;
        });
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks->stats().attempts >= 2; }));
        auto start = std::chrono::steady_clock::now();

        locks.reset();

        auto took = elapsed_since(start);
        for (auto& server : *this) server.thaw();
        CHECK(completions == 1);
        CHECK_FALSE(succeeded);
        CHECK(code == static_cast<int>(redlock::errc::client_stopped));
        CHECK(took < redlock_test::scaled(2000ms));
    }

    TEST_CASE_FIXTURE(cluster, "after shutdown an acquisition fails with client_stopped") {
        auto locks = make_client();
        locks.shutdown();

        auto held = locks.acquire("orders:42");

        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::client_stopped);
        locks.shutdown();  // idempotent
    }

    TEST_CASE("four nodes tolerate one crash") {
        cluster nodes{4};
        nodes[3].crash();
        auto locks = nodes.make_client();

        auto held = locks.acquire("orders:42");

        REQUIRE(held);
        auto released = locks.release(*held);
        REQUIRE(released);
        CHECK(released->quorum == 3);
        CHECK(released->deleted + released->pending == 3);  // a slow node may be pending
        CHECK(released->majority());
    }

    TEST_CASE("four nodes need three: two crashes make acquisition fail") {
        cluster nodes{4};
        nodes[2].crash();
        nodes[3].crash();
        auto locks = nodes.make_client();

        auto held = locks.acquire("orders:42");

        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::quorum_unreachable);
        CHECK(nodes.count_holding(nodes.key_of("orders:42")) == 0);
    }
}
