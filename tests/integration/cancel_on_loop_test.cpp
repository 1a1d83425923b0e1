// client::cancel() called on the loop thread (inside another callback) must not
// run the cancelled acquisition's callback inside it: client.hpp promises that
// callbacks never run inside the call that started them, cancel() included.
// An acquisition sleeping between retries has nothing left to undo, so its
// failure was once delivered at once, inside cancel().

#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

struct one_node : cluster {
    one_node() : cluster(1) {}
};

}  // namespace

TEST_SUITE("cancel") {
    TEST_CASE_FIXTURE(one_node,
                      "cancel() on the loop thread of an acquisition sleeping between retries "
                      "returns before the acquisition's callback runs") {
        auto holder = make_client();
        auto held = holder.acquire("r");
        REQUIRE(held);
        auto settings = config();
        // Refused once, it sleeps 10 s before its second and last attempt.
        settings.retry = {.attempts = 2, .delay = 10s, .jitter = 0ms};
        auto locks = make_client(settings);

        std::atomic<bool> cancelling{false};
        std::atomic<bool> ran_inside_cancel{false};
        std::atomic<bool> cancelled{false};
        std::atomic<bool> other_granted{false};
        std::atomic<int> calls{0};
        redlock_test::countdown done{2};
        const auto sleeper =
            locks.acquire_async("r", {}, [&](const redlock::result<redlock::lock>& r) {
                ran_inside_cancel = cancelling.load();
                cancelled = !r && r.error().code == redlock::errc::cancelled;
                ++calls;
                done.count_down();
            });
        // On the one connection this SET is answered after the first one, so when its
        // callback runs (on the loop thread) the first acquisition has been refused and
        // sleeps, with nothing to undo: the node refused it.
        locks.acquire_async("s", {}, [&](const redlock::result<redlock::lock>& r) {
            other_granted = r.has_value();
            cancelling = true;
            locks.cancel(sleeper);
            cancelling = false;
            done.count_down();
        });

        REQUIRE(done.wait_for(redlock_test::scaled(5s)));
        CHECK(other_granted);
        CHECK(cancelled);
        CHECK_FALSE(ran_inside_cancel);
        CHECK(redlock_test::holds_for(100ms, [&] { return calls == 1; }));
    }
}
