// A lost auto-renewed lock says why and lets go, against five real
// redis-server processes: on_lost's error carries every node's answer to the
// last renewal, and the nodes that still held the lock's value drop it once its
// validity has ended (not before: its holder may still act until then; well
// before their TTL), while another holder's value stays.
#include "support/cluster.hpp"
#include "support/loss_record.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::loss_record;

namespace {

/// The report on server `i`, found by its port.
auto report_of(const std::vector<redlock::node_report>& nodes, cluster& servers, std::size_t i)
    -> const redlock::node_report* {
    const std::string suffix = ":" + std::to_string(servers[i].port());
    for (const auto& r : nodes) {
        if (r.node.view().ends_with(suffix)) return &r;
    }
    return nullptr;
}

/// `locks`' auto-renewed lock on `resource`, reporting to `loss`, once every
/// node is connected and holds it: the cases then take it away on some.
auto renewed_everywhere(const cluster& nodes, redlock::client& locks, loss_record& loss,
                        const std::string& resource, std::chrono::milliseconds ttl)
    -> redlock::lock {
    REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                     [&] { return locks.stats().nodes_connected == 5; }));
    auto held = locks.acquire(resource, loss.options(ttl));
    REQUIRE(held);
    const std::string key = nodes.key_of(resource);
    REQUIRE(redlock_test::wait_until(redlock_test::scaled(1s),
                                     [&] { return nodes.count_holding(key, held->value()) == 5; }));
    return std::move(*held);
}

}  // namespace

TEST_SUITE("renewal") {
    TEST_CASE_FIXTURE(cluster,
                      "a lock taken over on a majority: on_lost names the refusing nodes, "
                      "and the others let go when its validity ends") {
        loss_record loss;
        auto locks = make_client();
        const auto held = renewed_everywhere(*this, locks, loss, "orders:7", 3000ms);
        const std::string key = key_of("orders:7");
        for (std::size_t i : {0U, 1U, 2U})
            (void)node(i).command({"SET", key, "someone-else", "PX", "20000"});

        // The next renewal (a third of the TTL away) is refused by a majority; it
        // extended the key on the two others, for a TTL more.
        REQUIRE(loss.arrived.wait_for(redlock_test::scaled(3s)));
        const auto still_there = count_holding(key, held.value());
        const auto gone = redlock_test::wait_until(
            redlock_test::scaled(3s), [&] { return count_holding(key, held.value()) == 0; });
        const auto let_go_after = std::chrono::steady_clock::now();

        const std::lock_guard hold{loss.mutex};
        REQUIRE(loss.why);
        CHECK(loss.why->code == redlock::errc::lock_lost);
        REQUIRE(loss.why->nodes.size() == 5);
        for (std::size_t i : {0U, 1U, 2U}) {
            const auto* r = report_of(loss.why->nodes, *this, i);
            REQUIRE(r != nullptr);
            CHECK(r->status == redlock::node_status::refused);
            CHECK(r->detail == "holds another value");
        }
        for (std::size_t i : {3U, 4U}) CHECK(report_of(loss.why->nodes, *this, i) != nullptr);
        // Released on the two nodes that still had it: not while its validity
        // lasted, then at once, long before the 3 s their keys had left ...
        CHECK(still_there == 2);
        CHECK(gone);
        CHECK(let_go_after >= held.valid_until());
        CHECK(let_go_after - held.valid_until() < 500ms);
        CHECK(let_go_after - loss.at < 2500ms);
        // ... and the other holder's value untouched.
        CHECK(count_holding(key, "someone-else") == 3);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a lock lost to a frozen majority: on_lost reports the timeouts, and "
                      "the live nodes let go") {
        loss_record loss;
        auto locks = make_client();
        // Failed renewals still extend the key on the two live nodes, so without
        // the release on loss it would stay there up to 2.5 s after on_lost.
        const auto held = renewed_everywhere(*this, locks, loss, "orders:8", 2500ms);
        const std::string key = key_of("orders:8");
        for (std::size_t i : {0U, 1U, 2U}) node(i).freeze();

        const bool arrived = loss.arrived.wait_for(redlock_test::scaled(6s));
        // count_holding skips frozen servers: this is nodes 3 and 4.
        const bool gone = arrived && redlock_test::wait_until(
                                         1s, [&] { return count_holding(key, held.value()) == 0; });
        for (std::size_t i : {0U, 1U, 2U}) node(i).thaw();

        REQUIRE(arrived);
        CHECK(gone);
        const std::lock_guard hold{loss.mutex};
        REQUIRE(loss.why);
        CHECK(loss.why->code == redlock::errc::lock_lost);
        REQUIRE(loss.why->nodes.size() == 5);
        for (std::size_t i : {0U, 1U, 2U}) {
            const auto* r = report_of(loss.why->nodes, *this, i);
            REQUIRE(r != nullptr);
            INFO("node ", r->node, ": ", r->status, " ", r->detail);
            // A timeout, or unreachable once the connection is given up on.
            CHECK(r->status != redlock::node_status::ok);
            CHECK_FALSE(r->detail.empty());
        }
        CHECK(locks.stats().locks_lost == 1);
    }
}
