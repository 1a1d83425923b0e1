// run_detached when the process cannot make a thread: the callback must still
// run exactly once, and never inside the call (it once ran inline then). Thread
// creation is made to fail through detached_thread_starter; the thread that is
// finally made waits for the test to open a gate, so that "not yet run when
// run_detached returns" is a fact, not a race.
#include "transport/callback_guard.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace {

std::atomic<int> starts_to_refuse{0};  // thread creations still to fail
std::atomic<int> start_calls{0};
std::promise<void> gate_opened;
const std::shared_future<void> gate{gate_opened.get_future().share()};

/// Fails while starts_to_refuse lasts, as the OS does without threads to give;
/// then makes a real thread, which waits for the gate before running `body`.
void failing_starter(std::function<void()> body) {
    ++start_calls;
    if (starts_to_refuse.fetch_sub(1) > 0) {
        throw std::system_error{std::make_error_code(std::errc::resource_unavailable_try_again)};
    }
    std::thread{[body = std::move(body)] {
        gate.wait();
        body();
    }}.detach();
}

/// What the callbacks saw: each one's runs, and the thread it ran on.
struct runs {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<int> order;
    std::vector<std::thread::id> threads;

    void add(int which) {
        // Notified under the lock: the test may destroy this as soon as it sees the run.
        const std::lock_guard lock{mutex};
        order.push_back(which);
        threads.push_back(std::this_thread::get_id());
        changed.notify_all();
    }
    auto count() -> std::size_t {
        const std::lock_guard lock{mutex};
        return order.size();
    }
    /// Waits until `n` runs were seen (an event, not a sleep; the bound only ends a hang).
    auto await(std::size_t n) -> bool {
        std::unique_lock lock{mutex};
        return changed.wait_for(lock, std::chrono::seconds{10}, [&] { return order.size() >= n; });
    }
};

}  // namespace

TEST_CASE("with no thread to be had, run_detached runs the callback later, once, elsewhere") {
    using redlock::detail::detached_thread_starter;
    using redlock::detail::run_detached;
    runs seen;
    const auto previous = detached_thread_starter.exchange(&failing_starter);

    // The callback's own thread and the first try at the fallback thread both
    // fail; the second try makes it (gated).
    starts_to_refuse = 2;
    run_detached([&] { seen.add(1); });
    CHECK(seen.count() == 0);  // not inside the call
    CHECK(start_calls == 3);

    // The fallback thread exists now: a second callback without a thread of its
    // own waits behind the first, and makes no thread.
    starts_to_refuse = 1;
    run_detached([&] { seen.add(2); });
    CHECK(seen.count() == 0);
    CHECK(start_calls == 4);

    gate_opened.set_value();
    REQUIRE(seen.await(2));

    // A callback on the fallback thread that waits for one it starts itself:
    // queued behind it, that one would never run.
    std::promise<bool> third_saw_fourth;
    starts_to_refuse = 2;  // the third's own thread, then the fourth's first try
    run_detached([&] {
        seen.add(3);
        run_detached([&] { seen.add(4); });
        third_saw_fourth.set_value(seen.await(4));
    });
    CHECK(third_saw_fourth.get_future().get());
    detached_thread_starter = previous;

    const std::lock_guard lock{seen.mutex};
    CHECK(seen.order == std::vector<int>{1, 2, 3, 4});  // exactly once each, in their order
    CHECK(seen.threads[0] != std::this_thread::get_id());
    CHECK(seen.threads[1] == seen.threads[0]);  // both on the fallback thread
    CHECK(seen.threads[2] == seen.threads[0]);
    CHECK(seen.threads[3] != seen.threads[0]);  // a thread of its own, made on a retry
}
