// What client.hpp and config.hpp promise, where the code once did otherwise
// (issue 13): callbacks never run inside the call that started them, even on a
// moved-from or stopped client; tickets are never 0; the logger runs on the
// loop thread; a moved-from client's config() is safe to call.

#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using namespace std::chrono_literals;
using redlock_test::cluster;

/// Records whether a callback ran inside the call that started it — during the
/// call and on the caller's thread, i.e. on its stack — and on which thread. (A
/// callback on another thread may well run before the call has returned.)
struct call_probe {
    std::atomic<bool> inside{false};
    std::atomic<bool> ran{false};
    std::atomic<bool> ran_inside{false};
    std::atomic<bool> stopped{false};
    std::thread::id thread;
    std::thread::id caller = std::this_thread::get_id();
    std::mutex mutex;

    /// Makes the call with this probe's callback, marking the call's extent.
    template <class Result, class Call>
    auto around(Call call) {
        inside = true;
        if constexpr (std::is_void_v<decltype(call(callback<Result>()))>) {
            call(callback<Result>());
            inside = false;
        } else {
            auto returned = call(callback<Result>());
            inside = false;
            return returned;
        }
    }

    /// Waits for the callback; it must have run outside the call, with client_stopped.
    void check_called_back_later() {
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(std::chrono::seconds{2}),
                                         [&] { return ran.load(); }));
        CHECK_FALSE(ran_inside);
        CHECK(stopped);
    }

    template <class Result>
    auto callback() {
        return [this](Result r) {
            {
                std::lock_guard held{mutex};
                thread = std::this_thread::get_id();
            }
            ran_inside = inside.load() && std::this_thread::get_id() == caller;
            stopped = !r && r.error().code == redlock::errc::client_stopped;
            ran = true;
        };
    }
};

}  // namespace

TEST_SUITE("contracts") {
    TEST_CASE_FIXTURE(cluster,
                      "a moved-from client calls back on another thread, never inside the "
                      "call, and its tickets are not 0") {
        auto locks = make_client();
        auto moved = std::move(locks);
        const redlock::lock held = moved.adopt("orders:42", "some-value");

        call_probe acquire;
        call_probe release;
        call_probe extend;
        // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is under test
        const auto ticket = acquire.around<redlock::result<redlock::lock>>(
            [&](auto cb) { return locks.acquire_async("orders:42", {}, std::move(cb)); });
        CHECK(ticket != 0);
        locks.cancel(ticket);  // harmless
        release.around<redlock::result<redlock::release_report>>(
            [&](auto cb) { locks.release_async(held, std::move(cb)); });
        extend.around<redlock::result<std::chrono::milliseconds>>(
            [&](auto cb) { locks.extend_async(held, 1000ms, std::move(cb)); });
        call_probe status;
        call_probe check;
        status.around<redlock::result<redlock::lock_status>>(
            [&](auto cb) { locks.status_async("orders:42", std::move(cb)); });
        check.around<redlock::result<redlock::cluster_health>>(
            [&](auto cb) { locks.check_async(std::move(cb)); });

        for (call_probe* p : {&acquire, &release, &extend, &status, &check}) {
            p->check_called_back_later();
            std::lock_guard held_probe{p->mutex};
            CHECK(p->thread != std::this_thread::get_id());
        }
        CHECK(locks.config().nodes.empty());  // no crash, and nothing to name
        CHECK(locks.node_count() == 0);
        // NOLINTEND(bugprone-use-after-move)
    }

    TEST_CASE_FIXTURE(cluster, "after shutdown, a call's callback still does not run inside it") {
        auto locks = make_client();
        locks.shutdown();

        call_probe acquire;
        call_probe release;
        const auto ticket = acquire.around<redlock::result<redlock::lock>>(
            [&](auto cb) { return locks.acquire_async("orders:42", {}, std::move(cb)); });
        CHECK(ticket != 0);
        release.around<redlock::result<redlock::release_report>>(
            [&](auto cb) { locks.release_async(locks.adopt("orders:42", "v"), std::move(cb)); });

        acquire.check_called_back_later();
        release.check_called_back_later();
    }

    TEST_CASE("the logger runs on the client's loop thread, not in create()") {
        cluster four{4};  // an even number of nodes: create() has something to say
        struct record {
            std::mutex mutex;
            std::vector<std::thread::id> threads;
        };
        auto seen = std::make_shared<record>();
        auto settings = four.config();
        settings.logger = [seen](redlock::log_level, std::string_view text) {
            if (text.find("even") == std::string_view::npos) return;
            std::lock_guard held{seen->mutex};
            seen->threads.push_back(std::this_thread::get_id());
        };
        auto locks = four.make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            std::lock_guard held{seen->mutex};
            return !seen->threads.empty();
        }));
        std::lock_guard held{seen->mutex};
        CHECK(seen->threads.size() == 1);
        CHECK(seen->threads.front() != std::this_thread::get_id());
    }
}
