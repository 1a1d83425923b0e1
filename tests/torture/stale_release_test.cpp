// A release sent by a failed attempt, delivered late on an old connection, must not
// delete the key a later attempt of the same acquisition set on the same node.
//
// A failed attempt releases by its value on every node whose outcome is unknown.
// Connections are independent paths: what an old connection carried can reach the node
// after what a new one carried (a slow path, retransmission after a partition; here the
// fault proxy's latency, lowered before the client reconnects). The late compare-and-
// delete then matches the later attempt's key, and a lock counted on a majority is held
// on a minority while its holder believes it valid.
//
// Found by this test (it failed 20 runs out of 20) and fixed in 3279b6d: the value used to
// be drawn once per acquisition and reused by every attempt. acquire_op::begin_attempt()
// now draws a fresh one, so a late release matches only the failed attempt that sent it.
#include "support/fault_proxy.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

TEST_SUITE("stale release") {
    // Nodes: 0 = X (behind a slow proxy), 1 = A, 2 = B (held by someone else).
    TEST_CASE("a late release of a failed attempt does not undo a later attempt's grant") {
        std::vector<redlock_test::redis_server> servers(3);
        std::vector<redlock_test::fault_proxy> proxies;
        for (const auto& s : servers) proxies.emplace_back(s.port());
        const std::string key = "redlock:{res}";
        REQUIRE(servers[2].command({"SET", key, "someone-else", "PX", "30000"}) == "OK");

        redlock_test::log_capture log;
        redlock::client_config alice_settings;
        for (const auto& p : proxies) alice_settings.nodes.push_back(p.address());
        alice_settings.connect_timeout = 200ms;
        alice_settings.request_timeout = 50ms;
        alice_settings.retry = {.attempts = 3, .delay = 20ms, .jitter = 10ms};
        alice_settings.reconnect = {.min_delay = 20ms, .max_delay = 200ms};
        alice_settings.logger = log.logger();
        auto alice = redlock::client::create(alice_settings);
        REQUIRE(alice);
        REQUIRE(redlock_test::wait_until(2s, [&] { return alice->stats().nodes_connected == 3; }));
        REQUIRE(redlock_test::wait_until(2s, [&] { return proxies[0].stats().open == 1; }));
        // Replies come in order: once this is answered, every handshake has been too, and
        // the connection to X is the one that will carry the late releases.
        REQUIRE(alice->status("warm-up"));

        // X's path becomes slow: every attempt's SET there times out, and each failed
        // attempt's release to X (outcome unknown) follows it down the same slow path.
        proxies[0].set_latency(2500ms);
        const auto begun = std::chrono::steady_clock::now();
        auto acquiring = std::async(std::launch::async, [&] {
            return alice->acquire("res",
                                  {.ttl = 10s, .max_wait = 6s, .wait = redlock::wait_mode::poll});
        });
        // Before Alice gives up on that connection (2 s after its first unanswered
        // request), the path recovers: her next connection is fast.
        std::this_thread::sleep_for(1900ms);
        proxies[0].set_latency(0ms);
        auto held = acquiring.get();
        REQUIRE_MESSAGE(held, (held ? "" : held.error().message) << log.dump());
        REQUIRE(held->valid());
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - begun);
        INFO("Alice acquired after " << took.count() << " ms; connects " << alice->stats().connects
                                     << ", timeouts " << alice->stats().timeouts);
        const std::string alice_value = held->value();
        INFO("Alice holds with value " << alice_value << " until " << held->remaining().count()
                                       << " ms from now");
        INFO("Alice's log:" << log.dump());
        // Granted on A and X (B is held by someone else): a majority of 3.
        CHECK(servers[0].get(key) == alice_value);
        CHECK(servers[1].get(key) == alice_value);

        // The old connection's backlog now reaches X: each failed attempt's SET NX (no-op
        // while the key exists) and release by the same value.
        std::string timeline;
        const auto since = std::chrono::steady_clock::now();
        const bool deleted = redlock_test::wait_until(3s, [&] {
            const auto now_value = servers[0].get(key);
            if (now_value == alice_value) return false;
            timeline += " after " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - since)
                                           .count()) +
                        " ms: " + now_value.value_or("(no key)");
            return true;
        });
        CHECK_MESSAGE(!deleted,
                      "a late release deleted Alice's key on X while her lock is valid "
                      "(X's key since Alice acquired:"
                          << timeline << ")");

        // Whoever holds B lets go; Carol, reaching the nodes directly, tries while
        // Alice's lock is still valid.
        servers[2].command({"DEL", key});
        redlock::client_config carol_settings = alice_settings;
        carol_settings.nodes.clear();
        for (const auto& s : servers) carol_settings.nodes.push_back(s.address());
        carol_settings.retry = {.attempts = 3, .delay = 5ms, .jitter = 5ms};
        carol_settings.logger = [](redlock::log_level, std::string_view) {};
        auto carol = redlock::client::create(carol_settings);
        REQUIRE(carol);
        auto second =
            carol->acquire("res", {.ttl = 2s, .max_wait = 2s, .wait = redlock::wait_mode::poll});
        const bool both = second && second->valid() && held->valid();
        CHECK_MESSAGE(!both, "Carol acquired 'res' while Alice's lock was valid: Alice's value on "
                                 << (servers[0].get(key) == alice_value) +
                                        (servers[1].get(key) == alice_value) +
                                        (servers[2].get(key) == alice_value)
                                 << " of 3 nodes, Carol's on "
                                 << (second ? (servers[0].get(key) == second->value()) +
                                                  (servers[1].get(key) == second->value()) +
                                                  (servers[2].get(key) == second->value())
                                            : 0)
                                 << " of 3");
        if (second) (void)carol->release(*second);
        (void)alice->release(*held);
    }
}
