// More nodes than the shells keep inline (8): what an acquisition does per node
// must hold for any count. A decided acquisition disowns the grants still
// unanswered, so that nothing keeps it alive for them.

#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

struct nine_nodes : cluster {
    nine_nodes() : cluster(9) {}
};

}  // namespace

TEST_SUITE("faults") {
    TEST_CASE_FIXTURE(nine_nodes,
                      "a decided acquisition on nine nodes disowns every frozen node's grant, "
                      "the ninth node's included") {
        auto settings = config();
        settings.request_timeout = 5s;  // the frozen nodes' requests stay open throughout
        settings.lock.ttl = 10s;
        auto locks = make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s),
                                         [&] { return locks.stats().nodes_connected == 9; }));
        for (const int i : {1, 4, 6, 8}) node(i).freeze();
        const auto key = key_of("orders:46");

        auto held = locks.acquire("orders:46");

        REQUIRE(held);
        // Five grants decided it; the four frozen nodes' requests are disowned, so nothing
        // keeps the acquisition alive (until request_timeout, 5 s, any one of them would).
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return locks.stats().operations == 0; }));
        CHECK(count_holding(key, held->value()) == 5);
        for (const int i : {1, 4, 6, 8}) node(i).thaw();
        // The frozen nodes now run the SETs they had buffered; their replies are dropped.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return count_holding(key, held->value()) == 9; }));
        auto released = locks.release(*held);
        REQUIRE(released);
        CHECK(released->deleted + released->pending == 9);
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s),
                                       [&] { return count_holding(key) == 0; }));
        CHECK(locks.stats().timeouts == 0);
    }
}
