#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <chrono>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

auto is_lowercase_hex(const std::string& text) -> bool {
    return std::ranges::all_of(
        text, [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

TEST_SUITE("acquire") {
    TEST_CASE_FIXTURE(
        cluster, "an acquired lock is valid and written to every node with its value and TTL") {
        auto locks = make_client();
        auto key = key_of("orders:42");

        auto held = locks.acquire("orders:42");

        REQUIRE(held);
        CHECK(held->valid());
        CHECK_FALSE(held->empty());
        CHECK(held->resource() == "orders:42");
        CHECK(held->remaining() > 0ms);
        CHECK(held->remaining() <= 2000ms);
        // The token, then the default holder text (holder_test.cpp has the rest).
        CHECK(held->value().size() > 33);
        CHECK(is_lowercase_hex(held->value().substr(0, 32)));
        CHECK(held->value()[32] == '|');
        // The call returns once a majority granted; the last SETs may still be in flight.
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return count_holding(key, held->value()) == 5; }));
        for (const auto& server : *this) {
            auto ttl = server.pttl(key);
            CHECK(ttl > 0);
            CHECK(ttl <= 2000);
        }
    }

    TEST_CASE_FIXTURE(cluster, "two acquisitions of the same resource get different values") {
        auto locks = make_client();
        auto first = locks.acquire("orders:42");
        REQUIRE(first);
        REQUIRE(locks.release(*first));

        auto second = locks.acquire("orders:42");

        REQUIRE(second);
        CHECK(second->value() != first->value());
    }

    TEST_CASE_FIXTURE(cluster,
                      "a held resource is contended for another client until it is released") {
        auto owner = make_client();
        auto rival = make_client();
        auto held = owner.acquire("orders:42");
        REQUIRE(held);
        REQUIRE(held_everywhere("orders:42", held->value()));
        redlock::lock_options three_attempts;
        three_attempts.attempts = 3;

        auto refused = rival.acquire("orders:42", three_attempts);
        REQUIRE(owner.release(*held));
        auto granted = rival.acquire("orders:42", three_attempts);

        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::contended);
        CHECK(refused.error().attempts == 3);
        CHECK_FALSE(refused.error().message.empty());
        auto says = [&](redlock::node_status status) {
            return std::ranges::count_if(refused.error().nodes, [&](const redlock::node_report& r) {
                return r.status == status;
            });
        };
        CHECK(says(redlock::node_status::refused) >= 3);
        CHECK_MESSAGE(says(redlock::node_status::ok) == 0, refused.error().message);
        REQUIRE(granted);
        CHECK(granted->valid());
    }

    TEST_CASE_FIXTURE(cluster, "a lock stops being valid once its TTL has run out") {
        auto locks = make_client();
        redlock::lock_options short_ttl;
        short_ttl.ttl = 300ms;

        auto held = locks.acquire("orders:42", short_ttl);

        // The winning attempt started before the call returned, and its validity ends at
        // that start + TTL - drift at the latest (before its keys expire on the nodes).
        auto returned = std::chrono::steady_clock::now();
        REQUIRE(held);
        CHECK(held->valid());
        CHECK(held->remaining() <= 300ms);
        CHECK(held->valid_until() <= returned + 300ms);
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s), [&] { return !held->valid(); }));
        CHECK(std::chrono::steady_clock::now() >= held->valid_until());
        CHECK(held->remaining() == 0ms);
    }

    TEST_CASE_FIXTURE(cluster, "copies of a lock handle share its validity") {
        auto locks = make_client();
        auto held = locks.acquire("orders:42");
        REQUIRE(held);
        redlock::lock copy = *held;

        REQUIRE(locks.release(*held));

        CHECK_FALSE(held->valid());
        CHECK_FALSE(copy.valid());
        CHECK(copy.valid_until() == held->valid_until());
    }

    TEST_CASE_FIXTURE(cluster, "an empty resource name is an invalid argument") {
        auto locks = make_client();

        auto held = locks.acquire("");

        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::invalid_argument);
        CHECK(total_keys() == 0);
    }

    TEST_CASE_FIXTURE(cluster, "a TTL of zero is an invalid argument") {
        auto locks = make_client();
        redlock::lock_options no_ttl;
        no_ttl.ttl = 0ms;

        auto held = locks.acquire("orders:42", no_ttl);

        REQUIRE_FALSE(held);
        CHECK(held.error().code == redlock::errc::invalid_argument);
        CHECK(total_keys() == 0);
    }

    TEST_CASE("a client without nodes is an invalid configuration") {
        redlock::client_config settings;
        settings.logger = [](redlock::log_level, std::string_view) {};

        auto made = redlock::client::create(settings);

        REQUIRE_FALSE(made);
        CHECK(made.error().code == redlock::errc::invalid_config);
        CHECK_FALSE(made.error().message.empty());
    }

    TEST_CASE("a default lock handle is empty and not valid") {
        redlock::lock nothing;

        CHECK(nothing.empty());
        CHECK_FALSE(nothing.valid());
        CHECK(nothing.remaining() == 0ms);
    }
}
