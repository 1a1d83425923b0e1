// The coroutine awaiters (redlock/coro.hpp): each starts the callback form of
// its operation in await_suspend and resumes the coroutine from the callback.

#include "redlock/coro.hpp"

#include <functional>
#include <mutex>
#include <utility>

namespace redlock {

namespace detail {

/// What a stop request and the acquisition it may cancel share. On the heap,
/// apart from the coroutine frame: await_suspend still reads it after the
/// acquisition has started, when the frame may already have resumed and gone.
struct acquire_cancel_state {
    // Recursive: a cancel on the loop thread may complete the acquisition
    // inside client::cancel, and so take this lock again on the same thread.
    std::recursive_mutex mutex;
    client* owner = nullptr;
    client::acquire_ticket ticket = 0;  ///< 0 until acquire_async has returned
    bool stop_pending = false;          ///< a stop came before the ticket
    bool done = false;                  ///< the callback ran: nothing to cancel
};

}  // namespace detail

namespace {

auto cancelled_before_start() -> error {
    return error{make_error_code(errc::cancelled),
                 "not locked: the stop token was stopped before the acquisition started",
                 {},
                 0};
}

}  // namespace

acquire_awaiter::acquire_awaiter(client& owner, std::vector<std::string> resources,
                                 lock_options options, std::stop_token stop)
    : owner_{&owner},
      resources_{std::move(resources)},
      options_{std::move(options)},
      stop_{std::move(stop)} {}

acquire_awaiter::acquire_awaiter(acquire_awaiter&&) noexcept = default;
acquire_awaiter::~acquire_awaiter() = default;

auto acquire_awaiter::await_ready() const noexcept -> bool {
    return stop_.stop_requested();
}

void acquire_awaiter::await_suspend(std::coroutine_handle<> waiting) {
    auto shared = std::make_shared<detail::acquire_cancel_state>();
    shared->owner = owner_;
    cancel_ = shared;
    if (stop_.stop_possible()) {
        on_stop_ = std::make_unique<std::stop_callback<std::function<void()>>>(
            stop_, std::function<void()>{[state = shared] {
                // A copy: if the cancel completes the acquisition on this
                // thread, the coroutine resumes and destroys this callback
                // (and its captures) before client::cancel returns.
                const std::shared_ptr<detail::acquire_cancel_state> keep = state;
                client::acquire_ticket ticket = 0;
                {
                    const std::lock_guard hold{keep->mutex};
                    if (keep->done) return;
                    if (keep->ticket == 0) {
                        keep->stop_pending = true;  // await_suspend cancels it
                        return;
                    }
                    ticket = keep->ticket;
                }
                // Without the lock: the coroutine cannot resume past the
                // destruction of this callback while it runs on another thread,
                // so the client (which outlives the co_await) is still there.
                keep->owner->cancel(ticket);
            }});
    }
    const client::acquire_ticket ticket = owner_->acquire_all_async(
        std::move(resources_), std::move(options_), [this, waiting, shared](result<lock> outcome) {
            {
                const std::lock_guard hold{shared->mutex};
                shared->done = true;
            }
            result_.emplace(std::move(outcome));
            waiting.resume();
        });
    // From here on `this` may be gone (the callback may have resumed the
    // coroutine on the loop thread): only locals.
    const std::lock_guard hold{shared->mutex};
    if (shared->done) return;
    shared->ticket = ticket;
    // A stop that came before the ticket. Cancelled under the lock, so that the
    // acquisition cannot complete and the coroutine destroy the client meanwhile.
    if (shared->stop_pending) shared->owner->cancel(ticket);
}

auto acquire_awaiter::await_resume() -> result<lock> {
    on_stop_.reset();  // waits for a stop callback running on another thread
    cancel_.reset();
    if (!result_) return failure{cancelled_before_start()};
    return std::move(*result_);
}

void extend_awaiter::await_suspend(std::coroutine_handle<> waiting) {
    owner_->extend_async(held_, ttl_, [this, waiting](result<std::chrono::milliseconds> outcome) {
        result_.emplace(std::move(outcome));
        waiting.resume();
    });
}

void release_awaiter::await_suspend(std::coroutine_handle<> waiting) {
    owner_->release_async(held_, [this, waiting](result<release_report> outcome) {
        result_.emplace(std::move(outcome));
        waiting.resume();
    });
}

}  // namespace redlock
