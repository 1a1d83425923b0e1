// Leader election over quorum members that are a Redis Cluster or a
// Sentinel-managed master (README, "Leader election"; tests/support/cluster_member
// and sentinel_member start real redis-server and redis-sentinel processes):
// an observer hears each change by message there too — on the election's shard
// channel (SPUBLISH) from a cluster, on its client's channel from a Sentinel's
// master — and a standby takes over after the resignation with a higher term.
#include "support/cluster.hpp"
#include "support/cluster_member.hpp"
#include "support/election_views.hpp"
#include "support/sentinel_member.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <future>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster_member;
using redlock_test::leads;
using redlock_test::sentinel_member;
using redlock_test::view_log;

namespace {

auto config_of(const cluster_member* shards, const sentinel_member* managed)
    -> redlock::client_config {
    redlock::client_config config = redlock_test::fixture_config({});
    if (shards != nullptr) {
        redlock::cluster_member m;
        m.seeds = shards->seeds();
        config.clusters.push_back(std::move(m));
    }
    if (managed != nullptr) {
        redlock::sentinel_member m;
        m.sentinels = managed->sentinels();
        m.master_name = managed->master_name();
        config.sentinel_masters.push_back(std::move(m));
    }
    // A first map or a first master address costs a round trip or two more than a node.
    config.request_timeout = redlock_test::scaled(200ms);
    return config;
}

/// Long enough that no change below is reported by the observer's timer at the
/// leader's validity, nor by its re-registration (every 10 s): only by message. The
/// bounds below stay short of that, however slow the build (scaled_within).
auto long_term() -> redlock::campaign_options {
    redlock::campaign_options o;
    o.ttl = 30s;
    return o;
}

}  // namespace

TEST_CASE(
    "an election over cluster and Sentinel members: every change reaches an observer by "
    "message") {
    cluster_member shards{{.shards = 2, .replicas = 0, .node_timeout = 1000ms, .server = {}}};
    sentinel_member managed;
    for (const bool cluster : {true, false}) {
        CAPTURE(cluster);
        const redlock::client_config config =
            cluster ? config_of(&shards, nullptr) : config_of(nullptr, &managed);
        auto watcher = redlock_test::create_client(config);
        auto first = redlock_test::create_client(config);
        auto second = redlock_test::create_client(config);
        for (auto* c : {&watcher, &first, &second}) REQUIRE(redlock_test::warm_up(*c));
        const std::string name = cluster ? "svc-cluster" : "svc-sentinel";

        view_log views;
        auto observing = watcher.observe(name, views.callback());
        REQUIRE(observing);
        REQUIRE(views.await(0, [](const redlock::election_view& v) { return !v.leader; }));

        auto won = first.campaign(name, "alpha", long_term());
        REQUIRE(won);
        const auto led = views.await(0, leads("alpha"), redlock_test::scaled_within(3s, 8s));
        REQUIRE(led);
        CHECK(views.at(*led).leader->term == won->term());

        REQUIRE(won->proclaim("beta"));
        const auto proclaimed =
            views.await(*led, leads("beta"), redlock_test::scaled_within(3s, 8s));
        REQUIRE(proclaimed);
        CHECK(views.at(*proclaimed).leader->term == won->term());

        std::promise<redlock::result<redlock::leadership>> next;
        (void)second.campaign_async(
            name, "gamma", long_term(),
            [&next](redlock::result<redlock::leadership> r) { next.set_value(std::move(r)); });
        REQUIRE(won->resign());
        auto future = next.get_future();
        REQUIRE(future.wait_for(redlock_test::scaled(5s)) == std::future_status::ready);
        auto standby = future.get();
        REQUIRE(standby);
        CHECK(standby->term() > won->term());
        const auto succeeded =
            views.await(*proclaimed, leads("gamma"), redlock_test::scaled_within(3s, 8s));
        REQUIRE(succeeded);
        CHECK(views.at(*succeeded).leader->term == standby->term());
        REQUIRE(standby->resign());
        CHECK(views.await(
            *succeeded, [](const redlock::election_view& v) { return !v.leader; },
            redlock_test::scaled_within(3s, 8s)));
    }
}
