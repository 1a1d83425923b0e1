// client::status for the lock kinds: the readers of a read-write lock (live
// ones only, and never the readers' marker as a holder), the writer, and a
// semaphore's permit holders, against five real redis-server processes.
#include "support/cluster.hpp"
#include "support/lock_kinds.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::scaled;
using redlock_test::wait_until;

namespace {

auto reader(std::chrono::milliseconds ttl = 2000ms) -> redlock::lock_options {
    return redlock_test::reader_options(ttl);
}

auto permits(int k) -> redlock::lock_options {
    return redlock_test::permit_options(k);
}

/// Waits until `value` is a live reader of "doc" on every node.
auto reading_everywhere(const cluster& nodes, const std::string& value) -> bool {
    return wait_until(scaled(5s), [&] {
        return redlock_test::count_reading(nodes, nodes.key_of("doc"), value) ==
               static_cast<int>(nodes.size());
    });
}

/// acquire returns at quorum; waits until every node has `key` (the rest of
/// the grants are still on their way), so that every node's view is known.
auto on_every_node(const cluster& nodes, const std::string& key) -> bool {
    return wait_until(scaled(2s), [&] { return nodes.count_holding(key) == 5; });
}

}  // namespace

TEST_SUITE("diagnostics") {
    TEST_CASE_FIXTURE(cluster,
                      "status shows the readers on every node and those a majority agree on") {
        auto a = make_client();
        auto b = make_client();
        // Connected everywhere first: an acquisition is decided at a majority, and a
        // node a fresh client had not reached yet would never hold its reader.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            return a.stats().nodes_connected == 5 && b.stats().nodes_connected == 5;
        }));
        auto r1 = a.acquire("doc", reader(10000ms));
        auto r2 = b.acquire("doc", reader(10000ms));
        REQUIRE(r1);
        REQUIRE(r2);
        REQUIRE(reading_everywhere(*this, r1->value()));
        REQUIRE(reading_everywhere(*this, r2->value()));

        auto status = a.status("doc");

        REQUIRE(status);
        CHECK_FALSE(status->majority_holder);  // never the readers' marker
        CHECK(status->shared());
        std::vector<std::string> expected{r1->value(), r2->value()};
        std::ranges::sort(expected);
        CHECK(status->majority_readers == expected);
        for (const auto& n : status->nodes) {
            INFO(n.node);
            CHECK(n.reachable);
            CHECK(n.detail.empty());
            CHECK(n.shared);
            CHECK_FALSE(n.holder);
            REQUIRE(n.ttl);
            CHECK(*n.ttl > 5000ms);  // the marker lasts as long as the longest reader
            REQUIRE(n.readers.size() == 2);
            CHECK(n.readers[0].value == expected[0]);
            CHECK(n.readers[1].value == expected[1]);
            for (const auto& r : n.readers) {
                REQUIRE(r.ttl);
                CHECK(*r.ttl > 0ms);
                CHECK(*r.ttl <= 10000ms);
            }
        }
    }

    TEST_CASE_FIXTURE(cluster,
                      "status leaves out a reader whose hold ended, though the set lists it") {
        auto locks = make_client();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        auto live = locks.acquire("doc", reader(5000ms));
        REQUIRE(live);
        REQUIRE(reading_everywhere(*this, live->value()));
        // A reader that crashed: its entry stays in the set after its hold ended
        // (scored 1 ms after the epoch: long past on every node's clock).
        const std::string dead = "0123456789abcdef0123456789abcdef";
        for (const auto& s : *this) s.command({"ZADD", key_of("doc") + "|readers", "1", dead});

        auto status = locks.status("doc");

        REQUIRE(status);
        CHECK(status->majority_readers == std::vector<std::string>{live->value()});
        for (const auto& n : status->nodes) {
            REQUIRE(n.readers.size() == 1);
            CHECK(n.readers[0].value == live->value());
        }
    }

    TEST_CASE_FIXTURE(cluster, "status of a writer shows it as the holder, with no readers") {
        auto locks = make_client();
        auto writer = locks.acquire("doc");
        REQUIRE(writer);
        REQUIRE(on_every_node(*this, key_of("doc")));

        auto status = locks.status("doc");

        REQUIRE(status);
        CHECK(status->majority_holder == writer->value());
        CHECK_FALSE(status->shared());
        CHECK(status->majority_readers.empty());
        for (const auto& n : status->nodes) {
            CHECK(n.holder == writer->value());
            CHECK_FALSE(n.shared);
            CHECK(n.readers.empty());
        }
    }

    TEST_CASE_FIXTURE(cluster,
                      "a reader alive on a minority of nodes is shown there, not as holding") {
        auto locks = make_client();
        const std::string lone = "fedcba9876543210fedcba9876543210";
        for (std::size_t i : {0U, 1U}) {
            redlock_test::plant_reader(node(i), key_of("doc"), lone, 5000);
        }

        auto status = locks.status("doc");

        REQUIRE(status);
        CHECK(status->majority_readers.empty());
        CHECK_FALSE(status->majority_holder);
        CHECK(status->nodes[0].shared);
        REQUIRE(status->nodes[1].readers.size() == 1);
        CHECK(status->nodes[1].readers[0].value == lone);
        CHECK(status->nodes[2].readers.empty());
    }

    TEST_CASE_FIXTURE(cluster,
                      "status of a semaphore shows each permit's holder and every node's view") {
        auto a = make_client();
        auto b = make_client();
        const auto permit_key = [&](int p) {
            return key_of("pool") + "|permit|" + std::to_string(p);
        };
        // One after the other: a grant still on its way to a node could lose
        // that node to the second acquisition, and its view would differ there.
        auto first = a.acquire("pool", permits(3));
        REQUIRE(first);
        REQUIRE(on_every_node(*this, permit_key(*first->permit())));
        auto second = b.acquire("pool", permits(3));
        REQUIRE(second);
        REQUIRE(on_every_node(*this, permit_key(*second->permit())));

        auto status = a.status("pool", 3);

        REQUIRE(status);
        CHECK(status->resource == "pool");
        CHECK(status->permits == 3);
        CHECK(status->quorum == 3);
        CHECK(status->held() == 2);
        REQUIRE(status->nodes.size() == 5);
        for (const auto& n : status->nodes) {
            CHECK(n.reachable);
            CHECK(n.permits == 3);
        }
        REQUIRE(status->permit_holders.size() == 3);
        for (int p = 0; p < 3; ++p) {
            const auto& permit = status->permit_holders[static_cast<std::size_t>(p)];
            INFO("permit " << p);
            CHECK(permit.permit == p);
            REQUIRE(permit.nodes.size() == 5);
            const redlock::lock* held = p == *first->permit()    ? &*first
                                        : p == *second->permit() ? &*second
                                                                 : nullptr;
            if (held == nullptr) {
                CHECK_FALSE(permit.majority_holder);
                CHECK_FALSE(permit.held_anywhere());
                continue;
            }
            CHECK(permit.majority_holder == held->value());
            for (const auto& view : permit.nodes) {
                CHECK(view.holder == held->value());
                REQUIRE(view.ttl);
                CHECK(*view.ttl <= 2000ms);
            }
        }
    }

    TEST_CASE_FIXTURE(cluster, "a permit held on a minority of nodes has no majority holder") {
        auto locks = make_client();
        node(3).command({"SET", key_of("pool") + "|permit|1", "stray", "PX", "5000"});

        auto status = locks.status("pool", 2);

        REQUIRE(status);
        CHECK(status->held() == 0);
        const auto& permit = status->permit_holders.at(1);
        CHECK(permit.held_anywhere());
        CHECK_FALSE(permit.majority_holder);
        CHECK(permit.nodes[3].holder == "stray");
        CHECK_FALSE(permit.nodes[0].holder);
        CHECK_FALSE(status->nodes[3].permits);  // no user has named a count there
    }

    TEST_CASE_FIXTURE(cluster,
                      "a semaphore's status with a bad count or resource is an invalid argument") {
        auto locks = make_client();

        auto none = locks.status("pool", 0);
        auto many = locks.status("pool", redlock::max_permits + 1);
        auto nameless = locks.status("", 3);

        REQUIRE_FALSE(none);
        CHECK(none.error().code == redlock::errc::invalid_argument);
        CHECK(none.error().message == "permits must be between 1 and 1024, not 0");
        REQUIRE_FALSE(many);
        CHECK(many.error().message.find("not 1025") != std::string::npos);
        REQUIRE_FALSE(nameless);
        CHECK(nameless.error().code == redlock::errc::invalid_argument);
    }

    TEST_CASE_FIXTURE(cluster, "a semaphore's status keeps the callback contract") {
        auto locks = make_client();
        const auto caller = std::this_thread::get_id();
        std::atomic<bool> inside{false};
        redlock_test::countdown done{2};
        // With a loop thread of its own, a callback run inside the call would
        // run on the caller's thread.
        const auto note = [&](auto) {
            if (std::this_thread::get_id() == caller) inside = true;
            done.count_down();
        };
        locks.status_async("pool", 0, note);  // refused, yet never inside the call
        locks.status_async("pool", 2, note);
        REQUIRE(done.wait_for(redlock_test::scaled(5s)));
        CHECK_FALSE(inside);

        auto moved = std::move(locks);
        auto refused = locks.status("pool", 2);  // NOLINT(bugprone-use-after-move): on purpose
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::client_stopped);
    }
}
