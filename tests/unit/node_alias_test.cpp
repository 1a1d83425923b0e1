// One server listed twice under two names. validate_config rejects what the
// spelling gives away (no lookup); find_duplicate_servers finds the rest from
// the run_ids client::check collects. The near misses matter as much as the
// rejections: 127.0.0.1 and 127.0.0.2 may well be two servers.

#include <doctest/doctest.h>
#include <redlock/client.hpp>
#include <redlock/config.hpp>
#include <redlock/diagnostics.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace {

using redlock::client_config;
using redlock::node_address;

auto tcp(std::string host, std::uint16_t port = 7001) -> node_address {
    return {std::move(host), port, ""};
}

auto unix_socket(std::string path) -> node_address {
    return {"", 6379, std::move(path)};
}

auto config_of(std::vector<node_address> nodes) -> client_config {
    client_config config;
    config.nodes = std::move(nodes);
    return config;
}

struct alias_case {
    node_address first;
    node_address second;
    const char* reason;
};

/// Validates {first, second} and expects the second rejected as the same
/// server as the first, naming both nodes and why.
void check_rejected(const alias_case& c) {
    const std::string pair = c.first.to_string() + " / " + c.second.to_string();
    CAPTURE(pair);
    const auto error = redlock::validate_config(config_of({c.first, c.second}), "test");
    REQUIRE(error.has_value());
    CHECK(error->field == "/nodes/1");
    CHECK(error->message == c.second.to_string() + " is the same server as /nodes/0 (" +
                                c.first.to_string() + "): " + c.reason);
}

void check_accepted(const node_address& first, const node_address& second) {
    const std::string pair = first.to_string() + " / " + second.to_string();
    CAPTURE(pair);
    const auto error = redlock::validate_config(config_of({first, second}), "test");
    // Touched only when there is one: doctest builds the message even on success with -s.
    const std::string text = error ? error->what() : "ok";
    CHECK_MESSAGE(!error.has_value(), text);
}

}  // namespace

TEST_CASE("node aliases: loopback names are the loopback addresses") {
    constexpr const char* localhost = "localhost is the loopback address 127.0.0.1 or ::1";
    constexpr const char* ip6_localhost = "ip6-localhost is the loopback address ::1";
    const std::vector<alias_case> cases{
        {tcp("127.0.0.1"), tcp("localhost"), localhost},
        {tcp("localhost"), tcp("127.0.0.1"), localhost},
        {tcp("::1"), tcp("localhost"), localhost},
        {tcp("localhost"), tcp("0:0:0:0:0:0:0:1"), localhost},
        {tcp("::ffff:127.0.0.1"), tcp("localhost"), localhost},
        {tcp("127.0.0.1"), tcp("LocalHost."),
         "LocalHost. is the loopback address 127.0.0.1 or ::1"},
        {tcp("::1"), tcp("ip6-localhost"), ip6_localhost},
        {tcp("ip6-loopback"), tcp("::1"), "ip6-loopback is the loopback address ::1"},
        {tcp("localhost"), tcp("ip6-localhost"),
         "localhost is the loopback address 127.0.0.1 or ::1, ip6-localhost is the loopback "
         "address ::1"},
        {tcp("ip6-localhost"), tcp("ip6-loopback"),
         "ip6-localhost is the loopback address ::1, ip6-loopback is the loopback address ::1"},
    };
    for (const auto& c : cases) check_rejected(c);
}

TEST_CASE("node aliases: spellings of one IP address") {
    const std::vector<alias_case> cases{
        {tcp("::1"), tcp("0:0:0:0:0:0:0:1"), "::1 and 0:0:0:0:0:0:0:1 are one address"},
        {tcp("127.0.0.1"), tcp("::ffff:127.0.0.1"),
         "127.0.0.1 and ::ffff:127.0.0.1 are one address"},
        {tcp("::ffff:10.0.0.1"), tcp("10.0.0.1"), "::ffff:10.0.0.1 and 10.0.0.1 are one address"},
        {tcp("2001:db8::1"), tcp("2001:0DB8:0:0::0001"),
         "2001:db8::1 and 2001:0DB8:0:0::0001 are one address"},
    };
    for (const auto& c : cases) check_rejected(c);
}

TEST_CASE("node aliases: host names differing in case or a final dot") {
    constexpr const char* reason = "host names ignore case and a final dot";
    check_rejected({tcp("redis-a"), tcp("redis-a."), reason});
    check_rejected({tcp("Redis-A.example.com."), tcp("redis-a.EXAMPLE.com"), reason});
    check_rejected({tcp("localhost"), tcp("localhost."), reason});
}

TEST_CASE("node aliases: one Unix socket path spelled twice") {
    check_rejected({unix_socket("/tmp/a.sock"), unix_socket("/tmp//a.sock"),
                    "/tmp/a.sock and /tmp//a.sock are one path"});
    check_rejected({unix_socket("/tmp/./a.sock"), unix_socket("/tmp/a.sock"),
                    "/tmp/./a.sock and /tmp/a.sock are one path"});
    check_rejected({unix_socket("//run/redis/./r.sock"), unix_socket("/run//redis/r.sock"),
                    "//run/redis/./r.sock and /run//redis/r.sock are one path"});
}

TEST_CASE("node aliases: identical spellings are still reported as duplicates") {
    const auto error =
        redlock::validate_config(config_of({tcp("Redis-A"), tcp("b"), tcp("redis-a")}), "test");
    REQUIRE(error.has_value());
    CHECK(error->field == "/nodes/2");
    CHECK(error->message == "duplicate of /nodes/0 (Redis-A:7001)");
}

TEST_CASE("node aliases: the later node is named, against the first it repeats") {
    const auto error = redlock::validate_config(
        config_of({tcp("10.0.0.1"), tcp("127.0.0.1"), tcp("10.0.0.2"), tcp("localhost")}), "test");
    REQUIRE(error.has_value());
    CHECK(error->what() ==
          "test: /nodes/3: localhost:7001 is the same server as /nodes/1 (127.0.0.1:7001): "
          "localhost is the loopback address 127.0.0.1 or ::1");
}

TEST_CASE("node aliases: the same rule applies to JSON files and to client::create") {
    const auto parsed = redlock::parse_config(
        R"({"nodes": [{"host": "127.0.0.1", "port": 7001}, {"host": "localhost", "port": 7001}]})",
        "x.json");
    REQUIRE_FALSE(parsed.has_value());
    CHECK(parsed.error().what() ==
          "x.json: /nodes/1: localhost:7001 is the same server as /nodes/0 (127.0.0.1:7001): "
          "localhost is the loopback address 127.0.0.1 or ::1");

    auto created = redlock::client::create(config_of({tcp("::1"), tcp("0::1")}));
    REQUIRE_FALSE(created.has_value());
    CHECK(created.error().code == redlock::errc::invalid_config);
    CHECK(created.error().message.find("/nodes/1: [0::1]:7001 is the same server as /nodes/0 "
                                       "([::1]:7001)") != std::string::npos);
}

TEST_CASE("node aliases: near misses that may be different servers stay accepted") {
    // Different loopback addresses: a server may listen on each.
    check_accepted(tcp("127.0.0.1"), tcp("127.0.0.2"));
    check_accepted(tcp("localhost"), tcp("127.0.0.2"));
    check_accepted(tcp("localhost"), tcp("127.1.0.1"));
    // 127.0.0.1 and ::1 are two sockets; only "localhost" may be either.
    check_accepted(tcp("127.0.0.1"), tcp("::1"));
    check_accepted(tcp("127.0.0.1"), tcp("ip6-localhost"));
    check_accepted(tcp("::1"), tcp("::2"));
    check_accepted(tcp("10.0.0.1"), tcp("10.0.0.10"));
    check_accepted(tcp("::ffff:10.0.0.1"), tcp("10.0.0.2"));
    // Same host, different ports.
    check_accepted(tcp("localhost", 7001), tcp("localhost", 7002));
    check_accepted(tcp("127.0.0.1", 7001), tcp("localhost", 7002));
    check_accepted(tcp("::1", 7001), tcp("0:0:0:0:0:0:0:1", 7002));
    // Different hosts, even if similar.
    check_accepted(tcp("redis-a"), tcp("redis-b"));
    check_accepted(tcp("redis-a"), tcp("redis-a.example.com"));
    check_accepted(tcp("localhost"), tcp("localhost.example.com"));
    // Different paths; ".." is not undone, since a symbolic link before it
    // leads elsewhere.
    check_accepted(unix_socket("/tmp/a.sock"), unix_socket("/tmp/b.sock"));
    check_accepted(unix_socket("/tmp/x/../a.sock"), unix_socket("/tmp/a.sock"));
    // TCP and a Unix socket: only client::check can tell.
    check_accepted(tcp("localhost", 6379), unix_socket("/tmp/redis.sock"));
}

TEST_CASE("node aliases: find_duplicate_servers groups nodes by run_id") {
    const auto health_of = [](std::vector<std::string> run_ids) {
        redlock::cluster_health health;
        health.quorum = run_ids.size() / 2 + 1;
        for (std::size_t i = 0; i < run_ids.size(); ++i) {
            redlock::node_health n;
            n.node =
                std::string{"n"}.append(std::to_string(i));  // GCC 12 -Wrestrict: not "n" + ...
            n.reachable = !run_ids[i].empty();
            n.run_id = std::move(run_ids[i]);
            health.nodes.push_back(std::move(n));
        }
        health.duplicates = redlock::find_duplicate_servers(health.nodes);
        return health;
    };

    SUBCASE("distinct run_ids: no group, every node a server") {
        const auto health = health_of({"a", "b", "c"});
        CHECK(health.duplicates.empty());
        CHECK(health.servers() == 3);
    }
    SUBCASE("unknown run_ids are never grouped") {
        const auto health = health_of({"a", "", "", "b", ""});
        CHECK(health.duplicates.empty());
        CHECK(health.servers() == 5);
    }
    SUBCASE("two groups, ordered by their first node") {
        const auto health = health_of({"x", "y", "y", "z", "x", "", "x"});
        REQUIRE(health.duplicates.size() == 2);
        CHECK(health.duplicates[0].run_id == "x");
        CHECK(health.duplicates[0].nodes == std::vector<std::size_t>{0, 4, 6});
        CHECK(health.duplicates[1].run_id == "y");
        CHECK(health.duplicates[1].nodes == std::vector<std::size_t>{1, 2});
        CHECK(health.servers() == 4);  // x, y, z and the unknown node 5
    }
    SUBCASE("no nodes") {
        CHECK(redlock::find_duplicate_servers({}).empty());
    }
}
