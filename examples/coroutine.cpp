// The README's coroutine example: acquire, extend and release with co_await.
// The library brings no task type; this one is the smallest that will do.
#include <redlock/redlock.hpp>

#include <chrono>
#include <coroutine>
#include <cstdio>
#include <exception>
#include <future>
#include <stop_token>
#include <thread>

namespace {

/// Starts at once and frees its own frame at the end; main() reads the
/// outcome from a future. The body runs on the client's loop thread after its
/// first co_await, so an exception is stored, never rethrown there.
struct task {
    struct promise_type {
        std::promise<int> out;
        auto get_return_object() -> task { return task{out.get_future()}; }
        static auto initial_suspend() noexcept -> std::suspend_never { return {}; }
        static auto final_suspend() noexcept -> std::suspend_never { return {}; }
        void return_value(int code) { out.set_value(code); }
        void unhandled_exception() { out.set_exception(std::current_exception()); }
    };
    std::future<int> exit_code;
};

auto work(redlock::client& locks, std::stop_token stop) -> task {
    using namespace std::chrono_literals;
    // Waits up to 5 s for the lock; a stop request on `stop` cancels the wait.
    auto held = co_await locks.async_acquire("invoices:42", {.ttl = 10s, .max_wait = 5s}, stop);
    // From here on this runs on the client's loop thread: no blocking calls.
    if (!held) {
        std::fprintf(stderr, "not locked: %s\n", redlock::to_string(held.error()).c_str());
        co_return 75;
    }
    std::printf("locked for %lld ms\n", static_cast<long long>(held->remaining().count()));

    if (auto left = co_await locks.async_extend(*held, 20s))
        std::printf("extended: %lld ms left\n", static_cast<long long>(left->count()));

    auto report = co_await locks.async_release(*held);
    if (report) std::printf("released on %zu of %zu nodes\n", report->deleted, locks.node_count());
    co_return report ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    auto config = redlock::load_config(argc > 1 ? argv[1] : "configs/local.json");
    if (!config) return std::fprintf(stderr, "%s\n", config.error().what().c_str()), 78;
    auto locks = redlock::client::create(*config);
    if (!locks) return std::fprintf(stderr, "%s\n", locks.error().message.c_str()), 78;

    std::stop_source stop;  // stop.request_stop() would cancel a waiting acquisition
    task running = work(*locks, stop.get_token());
    try {
        return running.exit_code.get();  // the client outlives the coroutine
    } catch (const std::exception& e) {
        std::fprintf(stderr, "the coroutine threw: %s\n", e.what());
        return 1;
    }
}
