#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace redlock::detail {

/// Calls `fn` where an exception must not escape: every entry point that libuv
/// calls. A user callback that throws is reported on stderr and the library
/// carries on; unwinding through libuv's C frames would be undefined behaviour.
template <class F>
void call_guarded(F&& fn) noexcept {
    try {
        std::forward<F>(fn)();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "redlock: a callback threw and was ignored: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "redlock: a callback threw and was ignored\n");
    }
}

/// Starts `body` on a detached thread, or throws (std::system_error) when the
/// process cannot make one. `body` only points at what it runs, so the caller
/// still owns that when this throws.
using thread_starter = void (*)(std::function<void()> body);

inline void start_detached_thread(std::function<void()> body) {
    std::thread{std::move(body)}.detach();
}

/// How run_detached makes its threads; a unit test swaps in one that fails.
inline std::atomic<thread_starter> detached_thread_starter{&start_detached_thread};

/// Starts `body` with detached_thread_starter, waiting and trying again for as
/// long as the process cannot make a thread: the caller waits for the system,
/// never for a callback, so this cannot deadlock on one of ours.
inline void start_thread_until_made(const std::function<void()>& body) noexcept {
    for (auto pause = std::chrono::milliseconds{1};;
         pause = std::min(pause * 2, std::chrono::milliseconds{100})) {
        try {
            detached_thread_starter.load()(body);
            return;
        } catch (...) {
            std::this_thread::sleep_for(pause);
        }
    }
}

/// run_detached's last resort: one thread for the whole process, made the first
/// time a callback could not have a thread of its own, that runs such callbacks
/// in their order and then waits for more for the rest of the process (never
/// destroyed, so it is never joined at exit either).
class detached_fallback {
public:
    static auto instance() -> detached_fallback& {
        static auto* const fallback = new detached_fallback;  // see above: never destroyed
        return *fallback;
    }

    /// Queues `fn` for the fallback thread, first making that thread if there is
    /// none yet. Never runs `fn` here.
    void post(std::function<void()> fn) noexcept {
        std::unique_lock lock{mutex_};
        queue_.push_back(std::move(fn));
        if (started_) {
            lock.unlock();
            more_.notify_one();
            return;
        }
        started_ = true;  // claimed: later callers only queue
        lock.unlock();
        start_thread_until_made([this] { run(); });
    }
    /// True on the fallback thread, which must not queue behind itself.
    [[nodiscard]] static auto on_fallback_thread() noexcept -> bool { return on_thread; }

private:
    detached_fallback() = default;

    [[noreturn]] void run() noexcept {
        on_thread = true;
        std::unique_lock lock{mutex_};
        for (;;) {
            more_.wait(lock, [this] { return !queue_.empty(); });
            std::function<void()> fn = std::move(queue_.front());
            queue_.pop_front();
            lock.unlock();
            call_guarded(fn);
            lock.lock();
        }
    }

    static inline thread_local bool on_thread = false;
    std::mutex mutex_;
    std::condition_variable more_;
    std::deque<std::function<void()>> queue_;
    bool started_ = false;
};

/// Runs `fn` exactly once, on another thread, so never inside the call that
/// started it: the last resort for a callback when no loop is left to run it (a
/// moved-from client, an owned loop that has ended). As a rule `fn` gets a
/// thread of its own. When the process cannot make one (out of threads, or of
/// memory for a stack), the process-wide fallback thread runs it; that thread
/// is made at first need, and should even that fail, the caller waits and
/// tries again until the system gives it a thread. Running `fn` inline instead
/// (as this once did) would break "never inside the call", and dropping it
/// "exactly once"; a blocked caller waits for the system only, so it cannot
/// deadlock on a callback of ours.
inline void run_detached(std::function<void()> fn) noexcept {
    auto* job = new std::function<void()>(std::move(fn));
    const std::function<void()> body = [job] {
        const std::unique_ptr<std::function<void()>> owned{job};
        call_guarded(*owned);
    };
    try {
        detached_thread_starter.load()(body);
        return;  // the thread owns `job` now
    } catch (...) {
        // No thread was made: `job` is still ours.
    }
    if (detached_fallback::on_fallback_thread()) {
        // Queued, `job` would wait behind the callback running on this thread,
        // which may itself be waiting for `job`.
        start_thread_until_made(body);
        return;
    }
    detached_fallback::instance().post(std::move(*job));
    delete job;  // NOLINT: emptied, its callable is queued
}

}  // namespace redlock::detail
