// TLS to the nodes against real redis-server processes listening with
// --tls-port, with certificates made by openssl for each case: a verified lock,
// the reasons a node is refused (unknown CA, name mismatch, a client
// certificate required), TLS and plain nodes side by side, and a node frozen
// in the middle of the TLS handshake.
#include "support/cluster.hpp"
#include "support/fake_server.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"
#include "support/tls_certs.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <deque>
#include <future>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::create_client;
using redlock_test::log_capture;
using redlock_test::tls_certs;
using redlock_test::tls_server;
using redlock_test::tls_server_options;

namespace {

/// The cluster fixture's timings, for these nodes, trusting the certs' CA.
auto config_for(std::vector<redlock::node_address> nodes, const tls_certs& certs)
    -> redlock::client_config {
    redlock::client_config settings = redlock_test::fixture_config(std::move(nodes));
    settings.tls = certs.options();
    // A TLS handshake on a loaded 2-core CI machine.
    settings.connect_timeout = redlock_test::scaled(300ms);
    settings.request_timeout = redlock_test::scaled(100ms);
    return settings;
}

/// The lock key holds `value` on `server` (read by the fixture, over TLS for a TLS server).
auto holds(const redlock_test::redis_server& server, const std::string& resource,
           const std::string& value) -> bool {
    return redlock_test::wait_until(redlock_test::scaled(2s), [&] {
        return server.get("redlock:{" + resource + "}") == value;
    });
}

/// Acquiring through the single node `node` fails, and the message names the
/// node and `reason`.
void refused(const redlock::client_config& settings, const std::string& reason) {
    auto locks = create_client(settings);
    auto held = locks.acquire("orders:1");
    REQUIRE_FALSE(held.has_value());
    const std::string& message = held.error().message;
    INFO(message);
    CHECK(message.find(settings.nodes.at(0).to_string()) != std::string::npos);
    CHECK(message.find(reason) != std::string::npos);
}

}  // namespace

TEST_SUITE("tls") {
    TEST_CASE("TLS: a lock, every node's certificate verified by address or by name") {
        const tls_certs certs;
        std::deque<tls_server> servers;
        for (int i = 0; i < 3; ++i) servers.emplace_back(certs);
        // "localhost" checks the name (and sends it as SNI); 127.0.0.1 the IP address.
        auto locks =
            create_client(config_for({servers[0].tls_address(), servers[1].tls_address("localhost"),
                                      servers[2].tls_address()},
                                     certs));
        auto held = locks.acquire("orders:42");
        REQUIRE_MESSAGE(held.has_value(), (held ? std::string{} : held.error().message));
        for (const auto& s : servers) CHECK(holds(s.server(), "orders:42", held->value()));
        CHECK(locks.release(*held));
        for (const auto& s : servers) CHECK_FALSE(s.server().exists("redlock:{orders:42}"));
        // TLS only: no plain port was open beside it.
        for (const auto& s : servers) {
            CHECK(s.server().command({"CONFIG", "GET", "port"}) == "port\n0");
        }
    }

    TEST_CASE("TLS: a node signed by another CA is refused: unknown CA") {
        const tls_certs certs;
        const tls_server other{certs, tls_server_options{.other_ca = true}};
        refused(config_for({other.tls_address()}, certs), "TLS handshake failed: unknown CA");
        CHECK(other.server().dbsize() == 0);
    }

    TEST_CASE("TLS: a certificate for another name is refused: name mismatch") {
        const tls_certs certs;
        const tls_server node{certs};
        auto settings = config_for({node.tls_address()}, certs);
        settings.tls->server_name = "redis.example.org";
        refused(settings, "TLS handshake failed: name mismatch");
        // Without verification the same node is accepted (encryption only).
        settings.tls->verify = false;
        auto locks = create_client(settings);
        CHECK(locks.acquire("orders:1").has_value());
    }

    TEST_CASE("TLS: a server that requires a client certificate") {
        const tls_certs certs;
        const tls_server node{certs, tls_server_options{.auth_clients = true}};
        auto settings = config_for({node.tls_address()}, certs);
        refused(settings, "client certificate required by the server");

        settings.tls->cert_file = certs.client_cert();
        settings.tls->key_file = certs.client_key();
        auto locks = create_client(settings);
        auto held = locks.acquire("orders:7");
        REQUIRE_MESSAGE(held.has_value(), (held ? std::string{} : held.error().message));
        CHECK(holds(node.server(), "orders:7", held->value()));
    }

    TEST_CASE("TLS: TLS, plain and Unix socket nodes in one cluster: a node says tls: false") {
        const tls_certs certs;
        const tls_server a{certs};
        const tls_server b{certs};
        const redlock_test::redis_server plain;
        redlock::node_address plain_address = plain.address();
        plain_address.tls = false;
        // A Unix socket never uses TLS, whatever its tls flag says.
        redlock_test::server_options unix_socket;
        unix_socket.unix_socket = true;
        const redlock_test::redis_server local{unix_socket};
        auto locks = create_client(config_for(
            {a.tls_address(), plain_address, b.tls_address(), local.unix_address()}, certs));
        auto held = locks.acquire("orders:9");
        REQUIRE_MESSAGE(held.has_value(), (held ? std::string{} : held.error().message));
        CHECK(holds(a.server(), "orders:9", held->value()));
        CHECK(holds(plain, "orders:9", held->value()));
        CHECK(holds(b.server(), "orders:9", held->value()));
        CHECK(holds(local, "orders:9", held->value()));
        CHECK(locks.release(*held));
    }

    TEST_CASE("TLS: check shows each node's TLS version, cipher and verification, or none") {
        const tls_certs certs;
        const tls_server by_address{certs};
        const tls_server by_name{certs};
        const tls_server tls12{certs, {}, {"--tls-protocols", "TLSv1.2"}};
        const redlock_test::redis_server plain;
        redlock::node_address plain_address = plain.address();
        plain_address.tls = false;
        redlock_test::server_options unix_socket;
        unix_socket.unix_socket = true;
        const redlock_test::redis_server local{unix_socket};
        auto settings = config_for({by_address.tls_address(), by_name.tls_address("localhost"),
                                    tls12.tls_address(), plain_address, local.unix_address()},
                                   certs);
        const auto encrypted = [](const redlock::node_health& n, const std::string& version,
                                  bool verified) {
            CAPTURE(n.node);
            REQUIRE_MESSAGE(n.reachable, n.detail);
            REQUIRE(n.tls.has_value());
            CHECK(n.tls->version == version);
            CHECK_FALSE(n.tls->cipher.empty());
            CHECK(n.tls->verified == verified);
        };
        const auto plain_text = [](const redlock::node_health& n) {
            CAPTURE(n.node);
            REQUIRE_MESSAGE(n.reachable, n.detail);
            CHECK_FALSE(n.tls.has_value());
        };
        const auto checked = [](redlock::client& locks) {
            auto health = locks.check();
            REQUIRE_MESSAGE(health.has_value(), (health ? std::string{} : health.error().message));
            REQUIRE(health->nodes.size() == 5);
            return *health;
        };
        {
            auto locks = create_client(settings);
            const auto health = checked(locks);
            // Redis 6+ and OpenSSL 1.1.1+ settle on TLS 1.3 unless one side forbids it.
            encrypted(health.nodes[0], "TLSv1.3", true);  // the certificate's IP address checked
            encrypted(health.nodes[1], "TLSv1.3", true);  // its name checked (and sent as SNI)
            encrypted(health.nodes[2], "TLSv1.2", true);
            // Each session's own cipher: TLS 1.2 suites are named apart from TLS 1.3's.
            CHECK(health.nodes[0].tls->cipher.starts_with("TLS_"));
            CHECK(health.nodes[2].tls->cipher != health.nodes[0].tls->cipher);
            plain_text(health.nodes[3]);
            plain_text(health.nodes[4]);
        }
        // Without verification the same nodes are reached, encrypted, but not verified.
        settings.tls->verify = false;
        auto unverified = create_client(settings);
        const auto health = checked(unverified);
        encrypted(health.nodes[0], "TLSv1.3", false);
        encrypted(health.nodes[1], "TLSv1.3", false);
        encrypted(health.nodes[2], "TLSv1.2", false);
        plain_text(health.nodes[3]);
        plain_text(health.nodes[4]);
        // A client without TLS settings reaches its node in plain text.
        auto untls = create_client(redlock_test::fixture_config({plain.address()}));
        const auto none = untls.check();
        REQUIRE(none.has_value());
        plain_text(none->nodes.at(0));
    }

    TEST_CASE(
        "TLS: a node frozen mid-handshake: TLS handshake timeout, the others grant the lock") {
        const tls_certs certs;
        std::deque<tls_server> servers;
        for (int i = 0; i < 3; ++i) servers.emplace_back(certs);
        // SIGSTOPped, the kernel still completes the TCP connect: the
        // ClientHello is never answered.
        servers[1].server().freeze();
        const log_capture log;
        auto settings = config_for(
            {servers[0].tls_address(), servers[1].tls_address(), servers[2].tls_address()}, certs);
        settings.logger = log.logger();
        auto locks = create_client(settings);
        auto held = locks.acquire("orders:5");
        REQUIRE_MESSAGE(held.has_value(), (held ? std::string{} : held.error().message));
        const std::string expected =
            "node " + servers[1].tls_address().to_string() + ": unreachable: TLS handshake timeout";
        CHECK_MESSAGE(redlock_test::wait_until(redlock_test::scaled(3s),
                                               [&] { return log.contains(expected); }),
                      log.dump());
        CHECK(locks.release(*held));

        // Alone, the frozen node fails the acquisition with the same reason.
        refused(config_for({servers[1].tls_address()}, certs), "TLS handshake timeout");
        servers[1].server().thaw();
    }

    TEST_CASE("TLS: a node on the wrong side of tls: the error says which way it is wrong") {
        const tls_certs certs;
        // TLS spoken to a plain Redis port: it waits for a newline that a
        // ClientHello may not contain (a timeout), or answers it in plain RESP
        // (not TLS). Either way the error points at a plain port.
        const redlock_test::redis_server plain;
        refused(config_for({plain.address()}, certs), "plain port");
        // The second way, every time: a server that answers in RESP at once.
        const redlock_test::fake_server resp_only{
            {.on_command = {},
             .on_accept = redlock_test::fake_answer{.bytes = redlock_test::resp::error(
                                                        "ERR unknown command")},
             .byte_interval = 1000ms}};
        refused(config_for({resp_only.address()}, certs),
                "TLS handshake failed: the server does not speak TLS (a plain port?");
        // Plain RESP spoken to a TLS port: the server drops the connection.
        const tls_server secure{certs};
        redlock::node_address no_tls = secure.tls_address();
        no_tls.tls = false;
        refused(config_for({no_tls}, certs), "before any answer (a TLS port?");
    }

    TEST_CASE("TLS: a waiter is woken by a release notification over its TLS subscriptions") {
        const tls_certs certs;
        std::deque<tls_server> servers;
        for (int i = 0; i < 3; ++i) servers.emplace_back(certs);
        const auto settings = config_for(
            {servers[0].tls_address(), servers[1].tls_address(), servers[2].tls_address()}, certs);
        auto owner = create_client(settings);
        auto waiter = create_client(settings);
        auto held = owner.acquire("ledger");
        REQUIRE(held);
        redlock::lock_options wait;
        wait.max_wait = 5s;
        auto granted =
            std::async(std::launch::async, [&] { return waiter.acquire("ledger", wait); });
        // Its subscriber connections are open, one per node, over TLS, and subscribed.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] {
            const auto s = waiter.stats();
            return s.waiters == 1 && s.subscriber_connections == 3 && s.subscribers_ready == 3;
        }));
        const auto released_at = std::chrono::steady_clock::now();
        REQUIRE(owner.release(*held));
        auto lock = granted.get();
        REQUIRE_MESSAGE(lock.has_value(), (lock ? std::string{} : lock.error().message));
        // Woken, not polling: a poller at retry.delay would make a dozen attempts.
        CHECK(std::chrono::steady_clock::now() - released_at < redlock_test::scaled_within(1s, 4s));
        CHECK(waiter.stats().attempts <= 6);
    }

    TEST_CASE("TLS: files that cannot be used are configuration errors naming the field") {
        const tls_certs certs;
        const tls_server node{certs};
        auto settings = config_for({node.tls_address()}, certs);
        settings.tls->ca_file = (certs.dir() / "missing.crt").string();
        auto made = redlock::client::create(settings);
        REQUIRE_FALSE(made.has_value());
        CHECK(made.error().message.find("/tls/ca_file: cannot read") != std::string::npos);

        // Readable, but no certificate: OpenSSL's reason, at client::create.
        settings.tls->ca_file = (certs.dir() / "server.ext").string();
        made = redlock::client::create(settings);
        REQUIRE_FALSE(made.has_value());
        INFO(made.error().message);
        CHECK(made.error().message.find("/tls/ca_file: cannot load CA certificates") !=
              std::string::npos);

        settings.tls = certs.options();
        settings.tls->cert_file = certs.client_cert();
        made = redlock::client::create(settings);
        REQUIRE_FALSE(made.has_value());
        CHECK(made.error().message.find("/tls/key_file: is required with /tls/cert_file") !=
              std::string::npos);

        settings.tls->key_file = certs.other_server_key();
        made = redlock::client::create(settings);
        REQUIRE_FALSE(made.has_value());
        CHECK(made.error().message.find("/tls/key_file: does not match /tls/cert_file") !=
              std::string::npos);
    }
}
