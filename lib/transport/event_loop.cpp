#include "transport/event_loop.hpp"

#include "transport/callback_guard.hpp"

#include <cassert>
#include <cerrno>
#include <csignal>
#include <exception>
#include <fcntl.h>
#include <future>
#include <pthread.h>
#include <unistd.h>
#include <utility>

namespace redlock::detail {
namespace {

// With a standard stream closed (a daemon, a job started with `0<&-`), the next descriptor
// opened takes its number: libuv's epoll or eventfd descriptor, or a node's socket, would
// be 0, 1 or 2. libuv then aborts the host when it closes it (uv__close asserts fd >
// STDERR_FILENO), and whatever the host prints would go to that descriptor. So a closed one
// is taken first, by /dev/null, close-on-exec: a child the host starts sees it closed, as
// it would have.
void take_closed_standard_fds() noexcept {
    for (int fd = 0; fd <= STDERR_FILENO; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        const int taken = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (taken < 0) return;                      // out of descriptors: uv_loop_init fails below
        if (taken > STDERR_FILENO) ::close(taken);  // another thread filled the gap first
    }
}

}  // namespace

event_loop::event_loop(uv_loop_t* external)
    : loop_{external != nullptr ? external : &own_loop_}, owned_{external == nullptr} {
    take_closed_standard_fds();
    // uv_loop_init only fails when the process is out of file descriptors.
    if (owned_ && uv_loop_init(loop_) != 0) std::terminate();
    const auto init = [this](uv_async_t* a) { return uv_async_init(loop_, a, &on_wakeup); };
    if (wakeup_.open(init) != 0) std::terminate();
    if (!owned_) {
        loop_thread_id_ = std::this_thread::get_id();
        // The caller's loop must not be kept alive by us alone.
        uv_unref(wakeup_.base());
    }
}

event_loop::~event_loop() {
    if (thread_.joinable()) join();
    close_loop();
    // Tasks posted to a loop that never ran them (close() drains the others).
    for (loop_task* t = queue_head_; t != nullptr;) delete std::exchange(t, t->next_);
}

auto event_loop::on_loop_thread() const noexcept -> bool {
    return std::this_thread::get_id() == loop_thread_id_;
}

void event_loop::run_thread(std::function<void()> after_run) {
    assert(owned_);
    std::promise<void> started;
    auto running = started.get_future();
    thread_ = std::thread([this, &started, after = std::move(after_run)] {
        // A write to a node that has just closed raises SIGPIPE in the writing
        // thread; blocked here, the write fails with EPIPE instead of killing
        // the host process. (An attached loop's thread is the caller's to set.)
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
        loop_thread_id_ = std::this_thread::get_id();
        started.set_value();
        uv_run(loop_, UV_RUN_DEFAULT);
        if (after) after();  // may destroy *this: nothing of ours is touched afterwards
    });
    // on_loop_thread() must be right as soon as this returns.
    running.wait();
}

auto event_loop::post(std::unique_ptr<loop_task>& t) -> bool {
    {
        std::lock_guard guard{mutex_};
        if (closing_) return false;
        loop_task* queued = t.release();
        (queue_tail_ != nullptr ? queue_tail_->next_ : queue_head_) = queued;
        queue_tail_ = queued;
        // Under the lock: once close() has seen closing_, the handle may be
        // freed by its close callback, and no other thread may still send.
        uv_async_send(wakeup_.get());
    }
    return true;
}

namespace {

class function_task final : public loop_task {
public:
    explicit function_task(event_loop::task fn) : fn_{std::move(fn)} {}
    void run(std::unique_ptr<loop_task> /*self*/) override { fn_(); }

private:
    event_loop::task fn_;
};

}  // namespace

auto event_loop::post(task t) -> bool {
    std::unique_ptr<loop_task> wrapped = std::make_unique<function_task>(std::move(t));
    return post(wrapped);
}

void event_loop::on_wakeup(uv_async_t* handle) {
    wakeup_handle::owner_of(handle).drain();
}

void event_loop::drain() {
    loop_task* batch = nullptr;
    {
        std::lock_guard guard{mutex_};
        batch = std::exchange(queue_head_, nullptr);
        queue_tail_ = nullptr;
    }
    // Outside the lock: tasks may post more tasks.
    while (batch != nullptr) {
        std::unique_ptr<loop_task> t{std::exchange(batch, batch->next_)};
        t->next_ = nullptr;
        loop_task& next = *t;
        call_guarded([&] { next.run(std::move(t)); });
    }
}

void event_loop::close(std::function<void()> done) {
    {
        std::lock_guard guard{mutex_};
        closing_ = true;
    }
    drain();  // tasks queued before close() still run, exactly once
    if (!on_closed_.add(std::move(done))) return;
    wakeup_.close([](event_loop& self) { self.on_closed_.closed(); });
}

void event_loop::join() {
    if (!owned_) return;
    if (thread_.joinable()) thread_.join();
    close_loop();
}

void event_loop::close_loop() noexcept {
    if (!owned_ || loop_closed_) return;
    loop_closed_ = true;
    [[maybe_unused]] const int rc = uv_loop_close(loop_);
    assert(rc == 0);  // a handle left open is a bug to fix, not to retry around
}

}  // namespace redlock::detail
