#pragma once

#include "transport/close_callbacks.hpp"
#include "transport/uv_handle.hpp"

#include <uv.h>

#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace redlock::detail {

/// Work handed to the loop thread from another thread. A task carries its own
/// arguments and is linked into the queue in place: posting one costs one
/// allocation, the task itself (a call made from another thread while many
/// locks are in flight is worth keeping cheap; see docs/benchmarks.md).
class loop_task {
public:
    loop_task() = default;
    loop_task(const loop_task&) = delete;
    auto operator=(const loop_task&) -> loop_task& = delete;
    virtual ~loop_task() = default;

    /// Runs once, on the loop thread. `self` is this task: it owns itself from
    /// here on, and may keep itself alive by moving `self` elsewhere.
    virtual void run(std::unique_ptr<loop_task> self) = 0;

private:
    friend class event_loop;
    loop_task* next_ = nullptr;
};

/// The libuv loop a client runs on: its own (with a thread), or the caller's.
///
/// post() is the one door into the loop from other threads. uv_async_send
/// coalesces wake-ups, so the wake-up callback drains the whole queue.
class event_loop {
public:
    using task = std::function<void()>;

    /// `external` null: an owned loop, created here and run on a thread started
    /// by run_thread(). Otherwise the caller's loop, which the caller runs; it
    /// must outlive this object's close().
    explicit event_loop(uv_loop_t* external);
    event_loop(const event_loop&) = delete;
    auto operator=(const event_loop&) -> event_loop& = delete;
    ~event_loop();

    [[nodiscard]] auto loop() noexcept -> uv_loop_t* { return loop_; }
    [[nodiscard]] auto owned() const noexcept -> bool { return owned_; }
    [[nodiscard]] auto on_loop_thread() const noexcept -> bool;

    /// Starts the loop thread (owned loops only). Call once, after every handle
    /// that must exist before the loop runs has been initialised. `after_run`
    /// runs on the thread once the loop has no more work.
    void run_thread(std::function<void()> after_run);

    /// Lets the loop thread finish on its own (the owner is being destroyed on
    /// that very thread, so it cannot be joined).
    void detach() { thread_.detach(); }

    /// Queues `t` to run on the loop thread, and takes it. False once close()
    /// has begun: the task was not queued, will never run, and is left in `t`.
    auto post(std::unique_ptr<loop_task>& t) -> bool;
    /// The same for a plain function (wrapped in a task).
    auto post(task t) -> bool;

    /// Stops accepting tasks and closes the wake-up handle after the queue is
    /// drained. Must run on the loop thread. The loop then ends by itself once
    /// every other handle is closed. Idempotent: a second call's `done` runs
    /// once the handle is closed (at once if it already is).
    void close(std::function<void()> done);

    /// Owned loops: waits for the thread to end and closes the loop. Any thread
    /// but the loop's own.
    void join();
    /// uv_loop_close for an owned loop whose thread has ended. Idempotent.
    void close_loop() noexcept;

private:
    using wakeup_handle = uv_handle<uv_async_t, event_loop>;
    static void on_wakeup(uv_async_t* handle);
    void drain();

    uv_loop_t own_loop_{};
    uv_loop_t* loop_;
    bool owned_;
    wakeup_handle wakeup_{*this};
    std::mutex mutex_;
    loop_task* queue_head_ = nullptr;  // owned: a FIFO linked through loop_task::next_
    loop_task* queue_tail_ = nullptr;
    bool closing_ = false;
    bool loop_closed_ = false;
    close_callbacks on_closed_;
    std::thread::id loop_thread_id_;
    std::thread thread_;  // last: started after everything it uses exists
};

}  // namespace redlock::detail
