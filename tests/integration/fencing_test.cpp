#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

auto fenced() -> redlock::lock_options {
    redlock::lock_options options;
    options.fencing = true;
    return options;
}

auto strictly_increasing(const std::vector<std::uint64_t>& tokens) -> bool {
    return std::ranges::adjacent_find(tokens, std::ranges::greater_equal{}) == tokens.end();
}

}  // namespace

TEST_SUITE("fencing") {
    TEST_CASE_FIXTURE(cluster,
                      "tokens strictly increase over 200 acquisitions alternating between two "
                      "clients") {
        auto first = make_client();
        auto second = make_client();
        std::vector<std::uint64_t> tokens;
        int without_token = 0;

        for (int i = 0; i < 200; ++i) {
            auto& locks = i % 2 == 0 ? first : second;
            auto held = locks.acquire("ledger", fenced());
            REQUIRE(held);
            if (held->fence()) {
                tokens.push_back(*held->fence());
            } else {
                ++without_token;
            }
            REQUIRE(locks.release(*held));
        }

        CHECK(without_token == 0);
        CHECK(tokens.size() == 200);
        CHECK(strictly_increasing(tokens));
        CHECK(tokens.front() >= 1);
    }

    TEST_CASE_FIXTURE(cluster,
                      "tokens keep increasing when two of five nodes restart empty between "
                      "acquisitions") {
        // What is under test is the counters, not the client's restart quarantine
        // (restart_safety_test.cpp), which would otherwise rightly refuse to count
        // four freshly emptied nodes.
        auto settings = config();
        settings.restart_quarantine = std::chrono::milliseconds{0};
        auto locks = make_client(settings);
        auto counter = fence_key_of("ledger");
        std::vector<std::uint64_t> tokens;
        auto acquire_once = [&] {
            auto held = locks.acquire("ledger", fenced());
            REQUIRE(held);
            REQUIRE(held->fence());
            tokens.push_back(*held->fence());
            REQUIRE(locks.release(*held));
            // The second round raises the counter on every node, stragglers included: with
            // all nodes reachable, every survivor of a minority restart holds the last token.
            REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
                return std::ranges::all_of(*this, [&](const redlock_test::redis_server& server) {
                    return server.get(counter) == std::to_string(tokens.back());
                });
            }));
        };
        auto restart_empty = [&](int a, int b) {
            auto connects = locks.stats().connects;
            node(a).crash();
            node(b).crash();
            node(a).restart();
            node(b).restart();
            REQUIRE(node(a).dbsize() == 0);
            REQUIRE(node(b).dbsize() == 0);
            // Reconnected to both, so that the next second round reaches them too.
            REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
                auto now = locks.stats();
                return now.connects >= connects + 2 && now.nodes_connected == 5;
            }));
        };
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        for (int i = 0; i < 3; ++i) acquire_once();

        restart_empty(0, 1);
        acquire_once();
        acquire_once();
        restart_empty(2, 3);
        acquire_once();
        restart_empty(4, 0);
        acquire_once();

        CHECK(tokens.size() == 7);
        CHECK(strictly_increasing(tokens));
    }

    TEST_CASE_FIXTURE(cluster, "fencing a lock over two resources is an invalid argument") {
        auto locks = make_client();

        auto held = locks.acquire_all({"a", "b"}, fenced());

        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::invalid_argument);
        CHECK(total_keys() == 0);
        CHECK(locks.stats().requests == 0);
    }

    TEST_CASE_FIXTURE(cluster, "a lock without fencing has no token and creates no counter") {
        auto locks = make_client();

        auto held = locks.acquire("ledger");

        REQUIRE(held);
        CHECK_FALSE(held->fence().has_value());
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return count_holding(key_of("ledger")) == 5; }));
        CHECK(total_keys() == 5);
        for (const auto& server : *this) CHECK_FALSE(server.exists(fence_key_of("ledger")));
    }

    TEST_CASE_FIXTURE(cluster,
                      "the counter holds the last token on every reachable node and never "
                      "expires") {
        node(4).crash();
        auto locks = make_client();
        auto counter = fence_key_of("ledger");

        auto held = locks.acquire("ledger", fenced());

        REQUIRE(held);
        REQUIRE(held->fence());
        auto token = std::to_string(*held->fence());
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s), [&] {
            for (std::size_t i = 0; i < 4; ++i) {
                if (node(i).get(counter) != token) return false;
            }
            return true;
        }));
        for (std::size_t i = 0; i < 4; ++i) CHECK(node(i).pttl(counter) == -1);
        // Releasing deletes the lock, not the counter.
        REQUIRE(locks.release(*held));
        CHECK(count_holding(key_of("ledger")) == 0);
        for (std::size_t i = 0; i < 4; ++i) {
            CHECK(node(i).get(counter) == token);
            CHECK(node(i).pttl(counter) == -1);
        }
    }
    TEST_CASE_FIXTURE(cluster,
                      "a node that missed the confirm round learns the token at the holder's "
                      "next extends") {
        // Without this, two in-memory nodes restarting empty could later take the last
        // copies of the token with them (README, "Where tokens come from").
        auto settings = config();
        settings.restart_quarantine = std::chrono::milliseconds{0};
        auto locks = make_client(settings);
        auto counter = fence_key_of("ledger");
        node(3).crash();
        node(4).crash();

        auto held = locks.acquire("ledger", fenced());
        REQUIRE(held);
        REQUIRE(held->fence());
        const auto token = std::to_string(*held->fence());
        auto connects = locks.stats().connects;
        node(3).restart();
        node(4).restart();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            auto now = locks.stats();
            return now.connects >= connects + 2 && now.nodes_connected == 5;
        }));
        CHECK_FALSE(node(3).exists(counter));
        CHECK_FALSE(node(4).exists(counter));

        // The first extend finds the key missing there and sets it again; a later one, holding
        // there, raises the counter.
        auto everywhere = [&] {
            return std::ranges::all_of(*this, [&](const redlock_test::redis_server& server) {
                return server.get(counter) == token;
            });
        };
        for (int i = 0; i < 3 && !everywhere(); ++i) REQUIRE(locks.extend(*held, 2s));
        CHECK(everywhere());
        REQUIRE(locks.release(*held));
    }
}
