#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>

using namespace std::chrono_literals;
using redlock_test::cluster;

TEST_SUITE("callbacks") {
    TEST_CASE_FIXTURE(cluster, "a callback that throws does not take the client down") {
        auto locks = make_client();
        std::atomic<int> calls{0};
        std::atomic<bool> empty_calls_done{false};

        locks.acquire_async("orders:42", {}, [&](redlock::result<redlock::lock> r) {
            ++calls;
            if (r) (void)locks.release_async(*r, [&](auto) { empty_calls_done = true; });
            throw std::runtime_error{"thrown by the test on purpose"};
        });
        // A failure completion (invalid argument) throwing from a timer callback.
        locks.acquire_async("", {}, [&](redlock::result<redlock::lock>) {
            ++calls;
            throw 42;
        });

        CHECK(redlock_test::wait_until(redlock_test::scaled(2s),
                                       [&] { return calls == 2 && empty_calls_done; }));
        auto again = locks.acquire("orders:42");
        REQUIRE(again);
        CHECK(again->valid());
    }
}
