// The fault proxy against a real redis-server: what passes through it, and what each
// fault does to a client.
#include "support/cluster.hpp"
#include "support/fault_proxy.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <redlock/client.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::elapsed_since;
using redlock_test::fault_proxy;
using redlock_test::redis_server;

namespace {

struct context_deleter {
    void operator()(redisContext* c) const noexcept { redisFree(c); }
};
using context_ptr = std::unique_ptr<redisContext, context_deleter>;

auto connect(std::uint16_t port, std::chrono::milliseconds timeout) -> context_ptr {
    const timeval tv{static_cast<time_t>(timeout.count() / 1000),
                     static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    context_ptr c{redisConnectWithTimeout("127.0.0.1", port, tv)};
    REQUIRE(c);
    REQUIRE_MESSAGE(c->err == 0, c->errstr);
    redisSetTimeout(c.get(), tv);
    return c;
}

/// The reply as text ("-" + error text for an error), or nullopt when no reply came
/// (timeout, EOF, reset).
auto run(redisContext& c, const std::vector<std::string>& argv) -> std::optional<std::string> {
    std::vector<const char*> args;
    std::vector<std::size_t> lengths;
    for (const auto& a : argv) {
        args.push_back(a.data());
        lengths.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(&c, static_cast<int>(args.size()), args.data(), lengths.data()));
    if (reply == nullptr) return std::nullopt;
    std::string text;
    if (reply->type == REDIS_REPLY_ERROR) text = "-";
    if (reply->str != nullptr) text += std::string{reply->str, reply->len};
    if (reply->type == REDIS_REPLY_INTEGER) text = std::to_string(reply->integer);
    freeReplyObject(reply);
    return text;
}

/// Three servers, each behind its own proxy, and a client config that names the proxies.
struct proxied_cluster {
    proxied_cluster() {
        for (int i = 0; i < 3; ++i) servers.emplace_back();
        for (const auto& s : servers) proxies.emplace_back(s.port());
        std::vector<redlock::node_address> nodes;
        for (const auto& p : proxies) nodes.push_back(p.address());
        settings = redlock_test::fixture_config(std::move(nodes));
    }

    std::vector<redis_server> servers;
    std::vector<fault_proxy> proxies;
    redlock::client_config settings;
};

}  // namespace

TEST_SUITE("fault proxy") {
    TEST_CASE("commands and replies pass through unchanged, large ones included") {
        redis_server server;
        fault_proxy proxy{server.port()};
        CHECK(proxy.port() != server.port());
        auto c = connect(proxy.port(), 2000ms);

        CHECK(run(*c, {"PING"}) == "PONG");
        CHECK(run(*c, {"SET", "greeting", "hello"}) == "OK");
        CHECK(server.get("greeting") == "hello");  // it reached the real server
        const std::string big(1 << 20, 'x');
        CHECK(run(*c, {"SET", "big", big}) == "OK");
        CHECK(run(*c, {"GET", "big"}) == big);
        const auto stats = proxy.stats();
        CHECK(stats.accepted == 1);
        CHECK(stats.open == 1);
        CHECK(stats.bytes_to_target > big.size());
        CHECK(stats.bytes_to_clients > big.size());
    }

    TEST_CASE("latency delays each direction by at least the latency set, until healed") {
        redis_server server;
        fault_proxy proxy{server.port()};
        auto c = connect(proxy.port(), 3000ms);
        REQUIRE(run(*c, {"PING"}) == "PONG");

        proxy.set_latency(100ms);
        CHECK(proxy.latency() == 100ms);
        auto start = std::chrono::steady_clock::now();
        CHECK(run(*c, {"PING"}) == "PONG");
        const auto slow = elapsed_since(start);
        CHECK(slow >= 200ms);  // 100 ms out, 100 ms back
        CHECK(slow < 2000ms);

        proxy.heal();
        CHECK(proxy.latency() == 0ms);
        start = std::chrono::steady_clock::now();
        CHECK(run(*c, {"PING"}) == "PONG");
        CHECK(elapsed_since(start) < 100ms);
    }

    TEST_CASE("what a client sent before it closed is still delivered, after the latency") {
        redis_server server;
        fault_proxy proxy{server.port()};
        proxy.set_latency(300ms);
        const auto start = std::chrono::steady_clock::now();
        {
            auto c = connect(proxy.port(), 100ms);
            CHECK_FALSE(run(*c, {"SET", "sent-then-closed", "1"}));  // no reply in 100 ms
        }  // closed here, long before the SET reaches the server
        CHECK_FALSE(server.exists("sent-then-closed"));
        CHECK(redlock_test::wait_until(2s, [&] { return server.exists("sent-then-closed"); }));
        CHECK(elapsed_since(start) >= 300ms);
        CHECK(redlock_test::wait_until(2s, [&] { return proxy.stats().open == 0; }));
    }

    TEST_CASE("a blackhole makes requests time out on open and new connections, heal delivers") {
        redis_server server;
        fault_proxy proxy{server.port()};
        auto before = connect(proxy.port(), 300ms);
        REQUIRE(run(*before, {"PING"}) == "PONG");

        proxy.blackhole();
        CHECK(proxy.blackholed());
        auto start = std::chrono::steady_clock::now();
        CHECK_FALSE(run(*before, {"SET", "late", "1"}));  // no reply: a timeout
        CHECK(elapsed_since(start) >= 250ms);
        CHECK(before->err != 0);
        // A new connection is accepted, and nothing is forwarded on it either.
        auto during = connect(proxy.port(), 300ms);
        CHECK_FALSE(run(*during, {"PING"}));
        CHECK_FALSE(server.exists("late"));  // held back, not lost...

        proxy.heal();
        // ... and delivered once healed, as TCP would after a partition: a late write.
        CHECK(redlock_test::wait_until(2s, [&] { return server.exists("late"); }));
        auto after = connect(proxy.port(), 1000ms);
        CHECK(run(*after, {"PING"}) == "PONG");
        CHECK(proxy.stats().accepted == 3);
    }

    TEST_CASE("drop_connections closes both sides at once, with FIN or with RST") {
        redis_server server;
        fault_proxy proxy{server.port()};
        for (auto mode : {fault_proxy::drop_mode::close, fault_proxy::drop_mode::reset}) {
            auto c = connect(proxy.port(), 1000ms);
            REQUIRE(run(*c, {"PING"}) == "PONG");
            REQUIRE(proxy.stats().open == 1);

            proxy.drop_connections(mode);
            CHECK(proxy.stats().open == 0);
            CHECK_FALSE(run(*c, {"PING"}));  // EOF or reset
            // The server side was closed too: only the test's own connection remains.
            CHECK(redlock_test::wait_until(2s, [&] {
                return server.command({"INFO", "clients"})->find("connected_clients:1") !=
                       std::string::npos;
            }));
            auto again = connect(proxy.port(), 1000ms);
            CHECK(run(*again, {"PING"}) == "PONG");
            proxy.drop_connections();
        }
        CHECK(proxy.stats().dropped == 4);
    }

    TEST_CASE("a redlock client reconnects after its connections were dropped") {
        proxied_cluster nodes;
        redlock_test::log_capture log;
        nodes.settings.logger = log.logger();
        auto locks = redlock::client::create(nodes.settings);
        REQUIRE(locks);
        REQUIRE(redlock_test::wait_until(2s, [&] { return locks->stats().nodes_connected == 3; }));
        // The kernel completes a connection before the proxy has accepted it.
        REQUIRE(redlock_test::wait_until(2s, [&] {
            for (auto& p : nodes.proxies) {
                if (p.stats().open == 0) return false;
            }
            return true;
        }));
        const auto connects = locks->stats().connects;

        for (auto& p : nodes.proxies) p.drop_connections();

        const bool back = redlock_test::wait_until(3s, [&] {
            const auto s = locks->stats();
            return s.connects >= connects + 3 && s.nodes_connected == 3;
        });
        CHECK_MESSAGE(back, "connects " << locks->stats().connects << " (before: " << connects
                                        << "), connected " << locks->stats().nodes_connected
                                        << log.dump());
        auto held = locks->acquire("proxied", {.ttl = 2000ms});
        REQUIRE(held);
        CHECK(held->valid());
        CHECK(locks->release(*held));
    }

    TEST_CASE("a redlock request to a blackholed node times out, two of them fail the quorum") {
        proxied_cluster nodes;
        auto locks = redlock::client::create(nodes.settings);
        REQUIRE(locks);
        REQUIRE(redlock_test::wait_until(2s, [&] { return locks->stats().nodes_connected == 3; }));
        nodes.proxies[0].blackhole();
        nodes.proxies[1].blackhole();
        const auto timeouts = locks->stats().timeouts;

        auto refused = locks->acquire("proxied", {.ttl = 2000ms, .attempts = 1});
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::quorum_unreachable);
        CHECK(locks->stats().timeouts >= timeouts + 2);

        nodes.proxies[1].heal();
        auto held = locks->acquire("proxied", {.ttl = 2000ms, .max_wait = 2000ms});
        REQUIRE(held);
        CHECK(held->valid());
        CHECK(locks->release(*held));
        nodes.proxies[0].heal();
    }
}
