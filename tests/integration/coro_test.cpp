// The coroutine awaiters (redlock/coro.hpp) against five real redis-server
// processes, driven by the smallest task type that will do: eager, its result
// in a std::future, its frame freed by itself at the end.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>
#include <redlock/coro.hpp>

#include <chrono>
#include <coroutine>
#include <exception>
#include <future>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// What a coroutine body threw, as text. Not the exception object: libstdc++ counts an
/// exception_ptr's references in code ThreadSanitizer does not see, so an exception made on
/// the loop thread and rethrown on the test thread reads to TSan as a race on its memory.
struct thrown {
    std::string what;
};

/// Starts at once; the value (or what the body threw) goes to a future.
/// final_suspend does not suspend, so nothing but the future is left to
/// outlive the coroutine: the test thread never races the frame's end.
template <class T>
struct eager {
    struct promise_type {
        std::promise<std::variant<T, thrown>> out;
        auto get_return_object() -> eager { return eager{out.get_future()}; }
        static auto initial_suspend() noexcept -> std::suspend_never { return {}; }
        static auto final_suspend() noexcept -> std::suspend_never { return {}; }
        void return_value(T value) { out.set_value(std::move(value)); }
        // Stored, never rethrown: the body runs on the client's loop thread.
        void unhandled_exception() {
            try {
                throw;
            } catch (const std::exception& e) {
                out.set_value(thrown{e.what()});
            } catch (...) {
                out.set_value(thrown{"a non-standard exception"});
            }
        }
    };
    std::future<std::variant<T, thrown>> result;

    /// The value, or nullopt if it is not there within scaled(limit) (or the body threw).
    auto get(std::chrono::milliseconds limit = 5s) -> std::optional<T> {
        if (result.wait_for(redlock_test::scaled(limit)) != std::future_status::ready) {
            return std::nullopt;
        }
        auto outcome = result.get();
        if (auto* value = std::get_if<T>(&outcome)) return std::move(*value);
        FAIL_CHECK("the coroutine threw: " << std::get<thrown>(outcome).what);
        return std::nullopt;
    }
};

/// The loop thread's id, from inside a callback.
auto loop_thread_of(redlock::client& locks) -> std::thread::id {
    std::promise<std::thread::id> id;
    locks.check_async([&id](auto) { id.set_value(std::this_thread::get_id()); });
    return id.get_future().get();
}

struct round_trip {
    bool acquired = false;
    bool extended = false;
    std::size_t deleted = 0;
    std::thread::id after_acquire, after_extend, after_release;
    std::string error;
};

auto acquire_extend_release(redlock::client& locks, std::string resource) -> eager<round_trip> {
    round_trip out;
    auto held = co_await locks.async_acquire(resource, {.ttl = 2s});
    out.after_acquire = std::this_thread::get_id();
    if (!held) {
        out.error = held.error().message;
        co_return out;
    }
    out.acquired = held->valid();
    auto left = co_await locks.async_extend(*held, 5s);
    out.after_extend = std::this_thread::get_id();
    out.extended = left.has_value() && *left > 2s;
    auto report = co_await locks.async_release(*held);
    out.after_release = std::this_thread::get_id();
    if (report) out.deleted = report->deleted + report->pending;
    co_return out;
}

auto try_acquire(redlock::client& locks, std::string resource, redlock::lock_options options,
                 std::stop_token stop = {}) -> eager<redlock::result<redlock::lock>> {
    co_return co_await locks.async_acquire(std::move(resource), std::move(options),
                                           std::move(stop));
}

/// `owner`'s lock on `resource`, held on every node: what the cases that
/// wait behind another holder start from.
auto held_everywhere_by(const cluster& nodes, redlock::client& owner, const std::string& resource,
                        std::chrono::milliseconds ttl) -> redlock::lock {
    auto held = owner.acquire(resource, {.ttl = ttl});
    REQUIRE(held);
    REQUIRE(nodes.held_everywhere(resource, held->value()));
    return std::move(*held);
}

/// On the loop thread (after a first co_await), waits for a contended lock
/// while a check's callback, also on the loop thread, requests the stop: the
/// cancel then runs on the loop, inside the stop request.
auto cancelled_from_the_loop(redlock::client& locks, std::string free, std::string busy,
                             std::stop_source stop) -> eager<redlock::result<redlock::lock>> {
    auto first = co_await locks.async_acquire(std::move(free), {.ttl = 2s});
    if (first) (void)co_await locks.async_release(*first);
    locks.check_async([stop](auto) mutable { stop.request_stop(); });
    co_return co_await locks.async_acquire(std::move(busy), {.max_wait = 8s}, stop.get_token());
}

auto throws_after_acquire(redlock::client& locks, std::string resource) -> eager<int> {
    auto held = co_await locks.async_acquire(resource, {.ttl = 1s});
    if (held) (void)co_await locks.async_release(*held);
    throw std::runtime_error{"thrown on the loop thread"};
}

}  // namespace

TEST_SUITE("coroutines") {
    TEST_CASE_FIXTURE(cluster, "acquire, extend and release in a coroutine, resumed on the loop") {
        auto locks = make_client();
        const auto loop = loop_thread_of(locks);
        REQUIRE(loop != std::this_thread::get_id());

        auto done = acquire_extend_release(locks, "coro:a").get();

        REQUIRE(done);
        INFO(done->error);
        CHECK(done->acquired);
        CHECK(done->extended);
        CHECK(done->deleted == 5);
        CHECK(done->after_acquire == loop);
        CHECK(done->after_extend == loop);
        CHECK(done->after_release == loop);
        CHECK(redlock_test::wait_until(redlock_test::scaled(1s),
                                       [&] { return count_holding(key_of("coro:a")) == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "a contended co_await returns the error") {
        auto locks = make_client();
        auto other = make_client();
        const auto held = held_everywhere_by(*this, other, "coro:b", 5s);

        auto got = try_acquire(locks, "coro:b", {.attempts = 1}).get();

        REQUIRE(got);
        REQUIRE_FALSE(*got);
        CHECK(got->error().code == redlock::errc::contended);
        CHECK(other.release(held));
    }

    TEST_CASE_FIXTURE(cluster, "a stop request cancels a waiting co_await") {
        auto locks = make_client();
        auto other = make_client();
        const auto held = held_everywhere_by(*this, other, "coro:c", 10s);
        std::stop_source stop;
        const auto started = std::chrono::steady_clock::now();

        auto waiting = try_acquire(locks, "coro:c", {.max_wait = 8s}, stop.get_token());
        CHECK(waiting.result.wait_for(200ms) == std::future_status::timeout);  // still waiting
        stop.request_stop();
        auto got = waiting.get(2s);

        REQUIRE(got);
        REQUIRE_FALSE(*got);
        CHECK(got->error().code == redlock::errc::cancelled);
        CHECK(std::chrono::steady_clock::now() - started < redlock_test::scaled(3s));
        CHECK(count_holding(key_of("coro:c"), held.value()) == 5);  // the holder untouched
        CHECK(other.release(held));
    }

    TEST_CASE_FIXTURE(cluster, "a stop requested on the loop thread cancels a co_await there") {
        auto locks = make_client();
        auto other = make_client();
        const auto held = held_everywhere_by(*this, other, "coro:f", 10s);

        auto got = cancelled_from_the_loop(locks, "coro:g", "coro:f", std::stop_source{}).get(3s);

        REQUIRE(got);
        REQUIRE_FALSE(*got);
        CHECK(got->error().code == redlock::errc::cancelled);
        CHECK(other.release(held));
    }

    TEST_CASE_FIXTURE(cluster, "stops racing the start of the acquisition all cancel it") {
        // The stop lands before, during or after await_suspend learns the
        // ticket: every one must end the wait, none may be lost.
        auto locks = make_client();
        auto other = make_client();
        const auto held = held_everywhere_by(*this, other, "coro:h", 10s);
        std::vector<eager<redlock::result<redlock::lock>>> waiting;
        for (int i = 0; i < 40; ++i) {
            std::stop_source stop;
            std::thread stopper{[stop]() mutable { stop.request_stop(); }};
            waiting.push_back(try_acquire(locks, "coro:h", {.max_wait = 8s}, stop.get_token()));
            stopper.join();
        }
        int cancelled = 0;
        for (auto& w : waiting) {
            auto got = w.get(3s);
            REQUIRE(got);
            if (!*got && got->error().code == redlock::errc::cancelled) ++cancelled;
        }
        CHECK(cancelled == 40);
        CHECK(other.release(held));
    }

    TEST_CASE_FIXTURE(cluster, "a stop token already stopped returns cancelled without starting") {
        auto locks = make_client();
        std::stop_source stop;
        stop.request_stop();
        const auto calls = locks.stats().acquire_calls;

        auto got = try_acquire(locks, "coro:d", {}, stop.get_token()).get();

        REQUIRE(got);
        REQUIRE_FALSE(*got);
        CHECK(got->error().code == redlock::errc::cancelled);
        CHECK(locks.stats().acquire_calls == calls);
        CHECK(count_holding(key_of("coro:d")) == 0);
    }

    TEST_CASE_FIXTURE(cluster, "a moved-from client's co_await resumes with client_stopped") {
        auto locks = make_client();
        const redlock::client moved{std::move(locks)};

        auto got = try_acquire(locks, "coro:i", {}).get();  // NOLINT(bugprone-use-after-move)

        REQUIRE(got);
        REQUIRE_FALSE(*got);
        CHECK(got->error().code == redlock::errc::client_stopped);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a coroutine that throws on the loop thread leaves the client working") {
        auto locks = make_client();
        auto failed = throws_after_acquire(locks, "coro:e");
        REQUIRE(failed.result.wait_for(redlock_test::scaled(5s)) == std::future_status::ready);
        const auto outcome = failed.result.get();
        REQUIRE(std::holds_alternative<thrown>(outcome));
        CHECK(std::get<thrown>(outcome).what == "thrown on the loop thread");

        auto done = acquire_extend_release(locks, "coro:e").get();
        REQUIRE(done);
        CHECK(done->acquired);
    }
}
