#include "support/blackhole.hpp"
#include "support/cluster.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::elapsed_since;
using redlock_test::log_capture;
using redlock_test::redis_server;
using redlock_test::server_options;

namespace {

auto mentions(std::string_view text, std::string_view part) -> bool {
    return text.find(part) != std::string_view::npos;
}

/// Every text an error puts in front of people: its message and each node's detail.
auto error_texts(const redlock::error& e) -> std::string {
    std::string all = e.message;
    for (const auto& n : e.nodes) all += "\n" + n.node + ": " + n.detail;
    return all;
}

struct three_nodes : cluster {
    three_nodes() : cluster(3) {}
};

struct four_nodes : cluster {
    four_nodes() : cluster(4) {}
};

/// Three masters that refuse every command until AUTH s3cret.
struct password_cluster : cluster {
    password_cluster()
        : cluster(3, server_options{.unix_socket = false,
                                    .extra_args = {"--requirepass", "s3cret"},
                                    .username = {},
                                    .password = "s3cret",
                                    .tls = {}}) {}
};

/// Three masters with an ACL user "locker" (password "pw2") next to the default user.
struct acl_cluster : cluster {
    acl_cluster()
        : cluster(3, server_options{.unix_socket = false,
                                    .extra_args = {"--user", "locker", "on", ">pw2", "~*", "+@all"},
                                    .username = {},
                                    .password = {},
                                    .tls = {}}) {}
};

}  // namespace

TEST_SUITE("transport") {
    TEST_CASE("a node reached through a Unix socket holds its share of a lock and releases it") {
        cluster tcp{2};
        redis_server local{server_options{
            .unix_socket = true, .extra_args = {}, .username = {}, .password = {}, .tls = {}}};
        auto settings = tcp.config();
        settings.nodes.push_back(local.unix_address());
        auto locks = tcp.make_client(settings);
        auto key = tcp.key_of("orders:42");

        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        // The call returns on a majority; the Unix socket node's SET may still be on its way.
        bool reached_local = redlock_test::wait_until(
            redlock_test::scaled(1s), [&] { return local.get(key) == held->value(); });
        auto report = locks.release(*held);

        CHECK(reached_local);
        REQUIRE(report);
        CHECK(report->deleted + report->pending == 3);  // a slow node may be pending
        // The release is decided at a majority and waits for the rest only as long again as
        // that took: on a loaded machine the Unix socket node may be the one still pending
        // (3 runs in 120 with three copies and a busy loop beside them). Its delete still
        // arrives, and the report names it either way.
        auto socket_name = "unix:" + local.unix_socket().string();
        CHECK(std::ranges::any_of(report->nodes, [&](const redlock::node_report& r) {
            return r.node == socket_name && (r.status == redlock::node_status::ok ||
                                             r.status == redlock::node_status::pending);
        }));
        CHECK(
            redlock_test::wait_until(redlock_test::scaled(1s), [&] { return !local.exists(key); }));
        CHECK(tcp.count_holding(key) == 0);
    }

    TEST_CASE_FIXTURE(three_nodes, "nodes given by host name are resolved and all of them used") {
        auto settings = config();
        for (auto& n : settings.nodes) n.host = "localhost";
        auto locks = make_client(settings);
        auto key = key_of("orders:42");

        auto held = locks.acquire("orders:42");

        REQUIRE(held);
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return count_holding(key, held->value()) == 3; }));
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return locks.stats().nodes_connected == 3; }));
    }

    TEST_CASE_FIXTURE(three_nodes,
                      "a host name that does not resolve makes its node unreachable, saying so") {
        auto rival = make_client();
        REQUIRE(rival.acquire("orders:42"));
        log_capture logs;
        auto settings = config();
        settings.nodes.insert(
            settings.nodes.begin(),
            redlock::node_address{.host = "no-such-host.invalid", .port = 6379, .unix_path = {}});
        // A long back-off keeps the node failed (not resolving again) while we acquire.
        settings.reconnect = {.min_delay = 1000ms, .max_delay = 1000ms};
        settings.logger = logs.logger();
        auto locks = make_client(settings);
        REQUIRE_MESSAGE(redlock_test::wait_until(redlock_test::scaled(5s),
                                                 [&] { return logs.contains("resolve"); }),
                        logs.dump());
        redlock::lock_options once;
        once.attempts = 1;

        auto held = locks.acquire("orders:42", once);

        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::contended);  // the rival holds the others
        REQUIRE(held.error().nodes.size() == 4);
        const auto& bad = held.error().nodes[0];
        CHECK(bad.node == "no-such-host.invalid:6379");
        CHECK(bad.status == redlock::node_status::unreachable);
        CHECK_MESSAGE(mentions(bad.detail, "resolve"), bad.detail);
        CHECK_MESSAGE(mentions(held.error().message, "resolve"), held.error().message);
        CHECK(mentions(logs.first("resolve")->text, "no-such-host.invalid"));
    }

    TEST_CASE_FIXTURE(three_nodes,
                      "one host name that does not resolve among three good nodes does not "
                      "prevent acquisition") {
        auto settings = config();
        settings.nodes.insert(
            settings.nodes.begin(),
            redlock::node_address{.host = "no-such-host.invalid", .port = 6379, .unix_path = {}});
        auto locks = make_client(settings);
        auto key = key_of("orders:42");

        auto held = locks.acquire("orders:42");

        REQUIRE(held);
        CHECK(held->valid());
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return count_holding(key, held->value()) == 3; }));
    }

    TEST_CASE_FIXTURE(password_cluster,
                      "a client with the right password acquires and releases on protected nodes") {
        auto settings = config();
        settings.password = redlock::secret{"s3cret"};
        auto locks = make_client(settings);
        auto key = key_of("orders:42");

        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        bool everywhere = redlock_test::wait_until(
            redlock_test::scaled(1s), [&] { return count_holding(key, held->value()) == 3; });
        auto report = locks.release(*held);

        CHECK(everywhere);
        REQUIRE(report);
        CHECK(report->deleted + report->pending == 3);  // a slow node may be pending
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key) == 0; }));
    }

    TEST_CASE_FIXTURE(password_cluster,
                      "a wrong password makes every node unreachable with an AUTH failure that "
                      "never shows the password") {
        const std::string wrong = "not-the-password-7f3a";
        log_capture logs;
        auto settings = config();
        settings.password = redlock::secret{wrong};
        settings.logger = logs.logger();
        auto locks = make_client(settings);
        REQUIRE_MESSAGE(redlock_test::wait_until(redlock_test::scaled(5s),
                                                 [&] { return logs.count("AUTH failed") >= 3; }),
                        logs.dump());
        redlock::lock_options once;
        once.attempts = 1;

        auto held = locks.acquire("orders:42", once);

        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::quorum_unreachable);
        REQUIRE(held.error().nodes.size() == 3);
        for (const auto& node : held.error().nodes) {
            CHECK_MESSAGE(node.status == redlock::node_status::unreachable, node.node);
            CHECK_MESSAGE((mentions(node.detail, "AUTH") || mentions(node.detail, "WRONGPASS")),
                          node.detail);
        }
        auto texts = error_texts(held.error());
        CHECK_MESSAGE(!mentions(texts, wrong), texts);
        CHECK_MESSAGE(!mentions(logs.dump(), wrong), logs.dump());
        CHECK(total_keys() == 0);
    }

    TEST_CASE_FIXTURE(acl_cluster, "a client authenticating as an ACL user acquires and releases") {
        auto settings = config();
        settings.username = "locker";
        settings.password = redlock::secret{"pw2"};
        auto locks = make_client(settings);
        auto key = key_of("orders:42");

        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        bool everywhere = redlock_test::wait_until(
            redlock_test::scaled(1s), [&] { return count_holding(key, held->value()) == 3; });
        auto report = locks.release(*held);

        CHECK(everywhere);
        REQUIRE(report);
        CHECK(report->deleted + report->pending == 3);  // a slow node may be pending
        CHECK(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                       [&] { return count_holding(key) == 0; }));
        for (const auto& server : *this) {
            auto clients = server.command({"CLIENT", "LIST"}).value_or("");
            CHECK_MESSAGE(mentions(clients, "user=locker"), clients);
        }
    }

    TEST_CASE_FIXTURE(cluster,
                      "a node whose connect hangs times out after connect_timeout and does not "
                      "prevent acquisition") {
        redlock_test::blackhole_listener blackhole;
        log_capture logs;
        auto settings = config();
        settings.nodes.pop_back();  // four real masters and the black hole
        settings.nodes.push_back(blackhole.address());
        settings.connect_timeout = 100ms;
        settings.logger = logs.logger();
        auto created = std::chrono::steady_clock::now();
        auto locks = make_client(settings);

        auto held = locks.acquire("orders:42");
        bool timed_out = redlock_test::wait_until(redlock_test::scaled(2s),
                                                  [&] { return logs.contains("connect timeout"); });

        REQUIRE(held);
        CHECK(held->valid());
        REQUIRE_MESSAGE(timed_out, logs.dump());
        auto warning = *logs.first("connect timeout");
        CHECK(warning.level == redlock::log_level::warning);
        CHECK_MESSAGE(mentions(warning.text, blackhole.address().to_string()), warning.text);
        auto after = std::chrono::duration_cast<std::chrono::milliseconds>(warning.at - created);
        CHECK(after >= 80ms);  // not before the timeout (uv_now is truncated to milliseconds)
        CHECK(after <= redlock_test::scaled(2s));
        CHECK(locks.stats().nodes_connected == 4);
    }

    TEST_CASE_FIXTURE(four_nodes, "a client with an even number of nodes warns about it") {
        log_capture logs;
        auto settings = config();
        settings.logger = logs.logger();

        auto locks = make_client(settings);

        // Logged on the loop thread, once it runs (contracts_test checks which thread).
        REQUIRE_MESSAGE(redlock_test::wait_until(redlock_test::scaled(2s),
                                                 [&] { return logs.contains("even"); }),
                        logs.dump());
        auto warning = logs.first("even");
        REQUIRE_MESSAGE(warning, logs.dump());
        CHECK(warning->level == redlock::log_level::warning);
        CHECK(mentions(warning->text, "4"));
    }

    TEST_CASE_FIXTURE(three_nodes, "a client with an odd number of nodes does not warn about it") {
        log_capture logs;
        auto settings = config();
        settings.logger = logs.logger();

        auto locks = make_client(settings);
        auto held = locks.acquire("orders:42");

        REQUIRE(held);
        CHECK_MESSAGE(!logs.contains("even"), logs.dump());
    }

    TEST_CASE_FIXTURE(three_nodes,
                      "a node back after a long outage is reconnected within the capped back-off") {
        auto settings = config();
        settings.reconnect = {.min_delay = 20ms, .max_delay = 200ms};
        auto locks = make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 3; }));
        node(0).crash();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 2; }));
        auto connects_before = locks.stats().connects;
        // The outage itself, not a synchronisation: uncapped doubling from 20 ms would have
        // reached a delay of seconds by its end.
        std::this_thread::sleep_for(1500ms);

        node(0).restart();
        auto restarted = std::chrono::steady_clock::now();

        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return locks.stats().nodes_connected == 3; }));
        // Uncapped, the back-off would have grown to 2.5 s by now.
        CHECK(elapsed_since(restarted) <= redlock_test::scaled_within(1s, 2s));
        CHECK(locks.stats().connects > connects_before);
    }
}
