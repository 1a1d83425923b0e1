// Cluster and Sentinel members over TLS, with AUTH: the discovered cluster nodes and the
// Sentinel-named master are reached like the seeds, verified against the CA, with the
// client's certificate (the servers require one).

#include "sansio/hash_slot.hpp"
#include "support/cluster.hpp"
#include "support/cluster_member.hpp"
#include "support/sentinel_member.hpp"
#include "support/tls_certs.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using redlock_test::lock_key;

namespace {

auto listener(const redlock_test::tls_certs& certs) -> redlock_test::tls_listener {
    return redlock_test::tls_listener{.cert_file = certs.server_cert(),
                                      .key_file = certs.server_key(),
                                      .ca_file = certs.ca(),
                                      .auth_clients = true,
                                      .client_cert_file = certs.client_cert(),
                                      .client_key_file = certs.client_key()};
}

auto tls_config(const redlock_test::tls_certs& certs) -> redlock::client_config {
    redlock::client_config config = redlock_test::fixture_config({});
    config.tls = redlock::tls_options{.ca_file = certs.ca(),
                                      .cert_file = certs.client_cert(),
                                      .key_file = certs.client_key(),
                                      .server_name = {},
                                      .verify = true};
    config.request_timeout = redlock_test::scaled(300ms);
    config.connect_timeout = redlock_test::scaled(1000ms);
    return config;
}

/// client::check shows the one member's TLS session: a version, a cipher, verified.
void expect_verified_tls(redlock::client& client) {
    const auto health = client.check();
    REQUIRE_MESSAGE(health.has_value(), (health ? std::string{} : health.error().message));
    REQUIRE(health->nodes.size() == 1);
    const redlock::node_health& n = health->nodes[0];
    REQUIRE_MESSAGE(n.reachable, n.detail);
    REQUIRE(n.tls.has_value());
    CHECK(n.tls->version.starts_with("TLSv1."));
    CHECK_FALSE(n.tls->cipher.empty());
    CHECK(n.tls->verified);
}

}  // namespace

TEST_CASE("a cluster member over TLS: every master reached and verified, locks on each") {
    const redlock_test::tls_certs certs;
    redlock_test::cluster_member_options options{
        .shards = 2, .replicas = 0, .node_timeout = 1000ms, .server = {}};
    options.server.tls = listener(certs);
    redlock_test::cluster_member shards{options};
    redlock::client_config config = tls_config(certs);
    config.clusters = {redlock::cluster_member{
        .seeds = {shards.seeds().front()}, .wait_replicas = 0, .refresh_interval = 10s}};
    auto client = redlock_test::create_client(config);
    // One resource in each master's slots: the one not seeded was found and reached over TLS.
    for (std::size_t master = 0; master < 2; ++master) {
        std::string r;
        for (int i = 0;
             r.empty() || shards.master_of_slot(redlock::detail::resource_slot(r)) != master; ++i)
            r = "tls:" + std::to_string(i);
        CAPTURE(r);
        redlock::result<redlock::lock> held = redlock::failure{redlock::error{}};
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            held = client.acquire(r, {.ttl = 5s});
            return held.has_value();
        }));
        CHECK(shards.get(lock_key(r)) == held->value());
        REQUIRE(client.release(*held));
        CHECK_FALSE(shards.exists(lock_key(r)));
    }
    // check reports the TLS of the master serving slot 0, verified against the CA.
    expect_verified_tls(client);
}

TEST_CASE("a Sentinel member over TLS with a password: the master named is reached and used") {
    const redlock_test::tls_certs certs;
    redlock_test::sentinel_member_options options;
    options.master_name = "tls-m";
    options.server.extra_args = {"--requirepass", "s3cret"};
    options.server.password = "s3cret";
    options.server.tls = listener(certs);
    redlock_test::sentinel_member managed{options};
    redlock::client_config config = tls_config(certs);
    config.password = redlock::secret{"s3cret"};  // the master's; the sentinels have none
    redlock::sentinel_member member;
    member.sentinels = managed.sentinels();
    member.master_name = "tls-m";
    config.sentinel_masters = {member};
    auto client = redlock_test::create_client(config);
    redlock::result<redlock::lock> held = redlock::failure{redlock::error{}};
    REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
        held = client.acquire("tls-sentinel", {.ttl = 5s});
        return held.has_value();
    }));
    CHECK(managed.server(managed.master_index()).get(lock_key("tls-sentinel")) == held->value());
    REQUIRE(client.release(*held));
    expect_verified_tls(client);  // the master's session, not the sentinels'
}
