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

using stop_hook = std::unique_ptr<std::stop_callback<std::function<void()>>>;

/// The state a stop request and a cancellable operation share, with the stop
/// callback registered (in `on_stop`) before the operation starts, so that no
/// stop is missed.
auto arm_cancel(client& owner, const std::stop_token& stop, stop_hook& on_stop)
    -> std::shared_ptr<detail::acquire_cancel_state> {
    auto shared = std::make_shared<detail::acquire_cancel_state>();
    shared->owner = &owner;
    if (stop.stop_possible()) {
        on_stop = std::make_unique<std::stop_callback<std::function<void()>>>(
            stop, std::function<void()>{[state = shared] {
                // A copy: if the cancel completes the operation on this thread,
                // the coroutine resumes and destroys this callback (and its
                // captures) before client::cancel returns.
                const std::shared_ptr<detail::acquire_cancel_state> keep = state;
                client::acquire_ticket ticket = 0;
                {
                    const std::lock_guard hold{keep->mutex};
                    if (keep->done) return;
                    if (keep->ticket == 0) {
                        keep->stop_pending = true;  // started() cancels it
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
    return shared;
}

/// The operation's callback ran: nothing to cancel any more.
void mark_done(detail::acquire_cancel_state& shared) {
    const std::lock_guard hold{shared.mutex};
    shared.done = true;
}

/// The operation started as `ticket`. A stop that came before the ticket is
/// cancelled under the lock, so that the operation cannot complete and the
/// coroutine destroy the client meanwhile.
void started(detail::acquire_cancel_state& shared, client::acquire_ticket ticket) {
    const std::lock_guard hold{shared.mutex};
    if (shared.done) return;
    shared.ticket = ticket;
    if (shared.stop_pending) shared.owner->cancel(ticket);
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
    auto shared = arm_cancel(*owner_, stop_, on_stop_);
    cancel_ = shared;
    const client::acquire_ticket ticket = owner_->acquire_all_async(
        std::move(resources_), std::move(options_), [this, waiting, shared](result<lock> outcome) {
            mark_done(*shared);
            result_.emplace(std::move(outcome));
            waiting.resume();
        });
    // From here on `this` may be gone (the callback may have resumed the
    // coroutine on the loop thread): only locals.
    started(*shared, ticket);
}

auto acquire_awaiter::await_resume() -> result<lock> {
    on_stop_.reset();  // waits for a stop callback running on another thread
    cancel_.reset();
    if (!result_) return failure{cancelled_before_start()};
    return std::move(*result_);
}

campaign_awaiter::campaign_awaiter(client& owner, std::string name, std::string proposal,
                                   campaign_options options, std::stop_token stop)
    : owner_{&owner},
      name_{std::move(name)},
      proposal_{std::move(proposal)},
      options_{std::move(options)},
      stop_{std::move(stop)} {}

campaign_awaiter::campaign_awaiter(campaign_awaiter&&) noexcept = default;
campaign_awaiter::~campaign_awaiter() = default;

auto campaign_awaiter::await_ready() const noexcept -> bool {
    return stop_.stop_requested();
}

void campaign_awaiter::await_suspend(std::coroutine_handle<> waiting) {
    auto shared = arm_cancel(*owner_, stop_, on_stop_);
    cancel_ = shared;
    const client::acquire_ticket ticket =
        owner_->campaign_async(std::move(name_), std::move(proposal_), std::move(options_),
                               [this, waiting, shared](result<leadership> outcome) {
                                   mark_done(*shared);
                                   result_.emplace(std::move(outcome));
                                   waiting.resume();
                               });
    started(*shared, ticket);  // `this` may be gone: only locals
}

auto campaign_awaiter::await_resume() -> result<leadership> {
    on_stop_.reset();
    cancel_.reset();
    if (!result_) {
        return failure{error{make_error_code(errc::cancelled),
                             "not leading: the stop token was stopped before the campaign started",
                             {},
                             0}};
    }
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
