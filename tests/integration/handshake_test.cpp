// The lean handshake against real servers: what a connection sends first, read from each
// node's INFO commandstats (which, unlike MONITOR, also counts CONFIG). A node that has
// the scripts is sent SCRIPT EXISTS and one INFO (which tells its clock), nothing else; one that
// lost them (SCRIPT FLUSH) is sent the missing ones at the next connection, and locks work through
// it; CONFIG GET appendfsync goes only to a node with AOF on.
#include "sansio/scripts.hpp"
#include "support/cluster.hpp"
#include "support/command_stats.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::command_calls;
using redlock_test::command_stats;

namespace {

void reset_stats(const redlock_test::redis_server& server) {
    REQUIRE(server.command({"CONFIG", "RESETSTAT"}) == "OK");
}

/// Waits until every node has answered the handshakes of `connects` connections in all.
auto connected(const redlock::client& locks, std::uint64_t connects) -> bool {
    return redlock_test::wait_until(redlock_test::scaled(3s), [&] {
        const auto s = locks.stats();
        return s.connects >= connects && s.nodes_connected == locks.node_count();
    });
}

}  // namespace

TEST_SUITE("handshake") {
    TEST_CASE_FIXTURE(cluster, "a node that has the scripts is sent SCRIPT EXISTS and one INFO") {
        for (const auto& server : *this) reset_stats(server);
        auto first = make_client();
        REQUIRE(connected(first, size()));
        // Fresh servers: the first client loads every script, once.
        for (const auto& server : *this) {
            const std::string stats = command_stats(server);
            CHECK(command_calls(stats, "script|exists") == 1);
            CHECK(command_calls(stats, "script|load") == redlock::detail::all_scripts().size());
            CHECK(command_calls(stats, "info") == 1);
            CHECK(command_calls(stats, "config|get") == 0);
        }

        // The next process finds them there: two commands per node (INFO tells the node's
        // clock: no TIME).
        for (const auto& server : *this) reset_stats(server);
        auto second = make_client();
        REQUIRE(connected(second, size()));
        for (const auto& server : *this) {
            const std::string stats = command_stats(server);
            CHECK(command_calls(stats, "script|exists") == 1);
            CHECK(command_calls(stats, "script|load") == 0);
            CHECK(command_calls(stats, "info") == 1);
            CHECK(command_calls(stats, "time") == 0);
            CHECK(command_calls(stats, "config|get") == 0);
        }
        auto held = second.acquire("orders:42");
        REQUIRE(held);
        CHECK(second.release(*held));
        for (const auto& server : *this) CHECK(command_calls(command_stats(server), "eval") == 0);
    }

    TEST_CASE_FIXTURE(cluster, "after SCRIPT FLUSH and a reconnect, the scripts are loaded again") {
        auto locks = make_client();
        REQUIRE(connected(locks, size()));
        const auto connects = locks.stats().connects;
        for (auto& server : *this) {
            REQUIRE(server.command({"SCRIPT", "FLUSH"}) == "OK");
            reset_stats(server);
            // Drops the client's connection; command() runs on a connection of its own.
            REQUIRE(server.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}));
        }
        REQUIRE(connected(locks, connects + size()));
        for (const auto& server : *this) {
            const std::string stats = command_stats(server);
            CHECK(command_calls(stats, "script|exists") == 1);
            CHECK(command_calls(stats, "script|load") == redlock::detail::all_scripts().size());
        }

        auto held = locks.acquire("orders:42", {.fencing = true});
        REQUIRE_MESSAGE(held, held.error().message);
        REQUIRE(held_everywhere("orders:42", held->value()));
        CHECK(locks.extend(*held, 5s));
        auto report = locks.release(*held);
        REQUIRE(report);
        CHECK(report->majority());
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s),
                                       [&] { return count_holding(key_of("orders:42")) == 0; }));
        // Every script call found its script: none fell back to EVAL.
        for (const auto& server : *this) CHECK(command_calls(command_stats(server), "eval") == 0);
    }

    TEST_CASE("CONFIG GET appendfsync goes only to a node with AOF on") {
        redlock_test::redis_server with_aof{redlock_test::persisting_every_write("aof-hs")};
        redlock_test::redis_server plain_1;
        redlock_test::redis_server plain_2;
        for (const auto* s : {&with_aof, &plain_1, &plain_2}) reset_stats(*s);
        redlock::client_config settings;
        settings.nodes = {with_aof.address(), plain_1.address(), plain_2.address()};
        settings.logger = [](redlock::log_level, std::string_view) {};
        auto locks = redlock::client::create(settings);
        REQUIRE(locks);
        REQUIRE(connected(*locks, 3));
        const std::string durable_stats = command_stats(with_aof);
        CHECK(command_calls(durable_stats, "info") == 1);
        CHECK(command_calls(durable_stats, "config|get") == 1);
        for (const auto* s : {&plain_1, &plain_2}) {
            const std::string stats = command_stats(*s);
            CHECK(command_calls(stats, "info") == 1);
            CHECK(command_calls(stats, "config|get") == 0);
        }
    }
}
