// Errors that name names: which of several resources is held, and which one is
// named twice (issue 17).
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

auto contains(const std::string& text, const std::string& part) -> bool {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_SUITE("error names") {
    TEST_CASE_FIXTURE(cluster, "contention over several resources names the one held") {
        auto owner = make_client();
        auto rival = make_client();
        auto held = owner.acquire("b");
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return count_holding(key_of("b"), held->value()) == 5;
        }));

        auto refused = rival.acquire_all({"a", "b", "c"});

        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::contended);
        const std::string& message = refused.error().message;
        INFO(message);
        CHECK(contains(message, "resources 'a', 'b', 'c': 'b' is held by another owner ("));
        CHECK_FALSE(contains(message, "'c' is held"));
    }

    TEST_CASE_FIXTURE(cluster, "contention over several resources names each one held") {
        auto owner = make_client();
        auto rival = make_client();
        auto first = owner.acquire("a");
        auto second = owner.acquire("c");
        REQUIRE(first);
        REQUIRE(second);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return count_holding(key_of("a"), first->value()) == 5 &&
                   count_holding(key_of("c"), second->value()) == 5;
        }));

        // The script stops at the first key held on each node: 'a' here, and
        // 'c' for the set that starts with it.
        auto refused = rival.acquire_all({"a", "b", "c"});
        auto reversed = rival.acquire_all({"c", "b", "a"});

        REQUIRE_FALSE(refused);
        REQUIRE_FALSE(reversed);
        INFO(refused.error().message);
        INFO(reversed.error().message);
        CHECK(contains(refused.error().message, "resources 'a', 'b', 'c': 'a' is held by another"));
        CHECK(
            contains(reversed.error().message, "resources 'c', 'b', 'a': 'c' is held by another"));
    }

    TEST_CASE_FIXTURE(cluster, "a resource named twice is named in the error") {
        auto locks = make_client();

        auto refused = locks.acquire_all({"a", "b", "a"});

        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::invalid_argument);
        INFO(refused.error().message);
        CHECK(contains(refused.error().message, "resource 'a' is named twice"));
        CHECK(total_keys() == 0);
    }
}
