// The delayed-restart rule, enforced by the client: a node that comes back
// empty (new run_id, no persistence of every write) may have forgotten a lock
// another client holds, so its grants do not count for one maximum TTL.
#include "support/cluster.hpp"
#include "support/log_capture.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// Alice holds "orders:42" on nodes 0, 1 and 2 only (a majority): her keys on
/// nodes 3 and 4 are gone, as if those SETs had failed. Then node 0 restarts
/// empty. Without the rule, Bob would win nodes 0, 3 and 4 — a second majority.
struct alice_holds_through_node_0 : cluster {
    alice_holds_through_node_0() {
        settings = config();
        settings.restart_quarantine = 1500ms;
        settings.logger = log.logger();
        bob.emplace(make_client(settings));
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return bob->stats().nodes_connected == 5; }));
        // Replies come in order: once this is answered, Bob's handshake (which
        // reads each node's run_id) has been answered too.
        REQUIRE(bob->status("warm-up"));
        alice.emplace(make_client());
        held = alice->acquire("orders:42", {.ttl = 10s});
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                         [&] { return count_holding(key_of("orders:42")) == 5; }));
        node(3).command({"DEL", key_of("orders:42")});
        node(4).command({"DEL", key_of("orders:42")});
        const auto connects = bob->stats().connects;
        node(0).crash();
        node(0).restart();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] {
            const auto s = bob->stats();
            return s.connects > connects && s.nodes_connected == 5 && s.node_restarts == 1;
        }));
    }

    redlock_test::log_capture log;
    redlock::client_config settings;
    std::optional<redlock::client> bob;
    std::optional<redlock::client> alice;
    redlock::result<redlock::lock> held{redlock::failure{redlock::error{}}};
};

}  // namespace

TEST_SUITE("restart safety") {
    TEST_CASE_FIXTURE(alice_holds_through_node_0,
                      "a restarted node's grant does not count within the quarantine") {
        auto stolen = bob->acquire("orders:42", {.attempts = 1});

        REQUIRE_FALSE(stolen);
        CHECK(stolen.error().code == redlock::errc::contended);
        CHECK(stolen.error().nodes[0].status == redlock::node_status::error);
        CHECK(stolen.error().nodes[0].detail.find("restarted without persisting") !=
              std::string::npos);
        CHECK(log.contains("restarted (new run_id) without persisting every write"));
        // Bob's failed attempt was released everywhere, Alice's keys are intact.
        CHECK(count_holding(key_of("orders:42"), held->value()) == 2);
    }

    TEST_CASE_FIXTURE(alice_holds_through_node_0,
                      "once the quarantine is over the node's grants count again") {
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            // Bob polls until the window passes (his failed attempts leave nothing behind).
            return static_cast<bool>(bob->acquire("orders:42", {.attempts = 1}));
        }));

        CHECK(bob->stats().acquired == 1);
    }

    TEST_CASE("a node that persists every write is trusted at once after a restart") {
        // Three nodes with AOF + fsync always, each in its own AOF directory.
        std::vector<std::unique_ptr<redlock_test::redis_server>> nodes;
        redlock::client_config settings;
        for (int i = 0; i < 3; ++i) {
            nodes.push_back(std::make_unique<redlock_test::redis_server>(
                redlock_test::persisting_every_write("aof")));
            settings.nodes.push_back(nodes.back()->address());
        }
        settings.lock.ttl = 2s;
        settings.restart_quarantine = 10s;
        settings.reconnect = {20ms, 200ms};  // back quickly after the restart
        settings.logger = [](redlock::log_level, std::string_view) {};
        auto locks = redlock::client::create(settings);
        REQUIRE(locks);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks->stats().nodes_connected == 3; }));
        REQUIRE(locks->status("warm-up"));  // the handshakes (run_ids) have been answered
        nodes[0]->crash();
        nodes[0]->restart();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] {
            const auto s = locks->stats();
            return s.node_restarts == 1 && s.nodes_connected == 3;
        }));

        nodes[2]->freeze();  // the majority must include the restarted node
        auto held = locks->acquire("orders:42", {.attempts = 1});
        nodes[2]->thaw();

        REQUIRE_MESSAGE(held, (held ? "" : held.error().message));
        CHECK(held->valid());
    }
}
