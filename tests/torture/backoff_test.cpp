// The reconnect back-off against a node that accepts connections and closes them at once
// (a TCP load balancer or sidecar whose Redis is down, or a node that restarts in a loop).
#include "support/fault_proxy.hpp"
#include "support/redis_server.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <thread>

using namespace std::chrono_literals;

TEST_SUITE("reconnect back-off") {
    // Found with the torture test's proxies and fixed in 3279b6d: the back-off used to be
    // reset as soon as the TCP connection was up, before the server had answered anything,
    // so a peer that accepts and closes was retried every 25..50 ms forever (129 connections
    // in 5 s). It is now reset only once the handshake has been answered.
    TEST_CASE("a node that accepts and closes at once is retried with a growing back-off") {
        redlock_test::fault_proxy dead{redlock_test::free_port()};  // nothing behind it
        redlock::client_config settings;  // default reconnect: 50 ms doubling up to 2000 ms
        settings.nodes.push_back(dead.address());
        settings.logger = [](redlock::log_level, std::string_view) {};
        auto locks = redlock::client::create(settings);
        REQUIRE(locks);

        std::this_thread::sleep_for(3s);

        // 25..50, 50..100, 100..200, 200..400, 400..800, 800..1600 ms: at most 7
        // connections in 3 s however the jitter falls; 12 leaves room for slow machines.
        const auto connects = dead.stats().accepted;
        CHECK_MESSAGE(connects <= 12, "the client connected " << connects
                                                              << " times in 3 s to a node that "
                                                                 "closes every connection at once");
    }
}
