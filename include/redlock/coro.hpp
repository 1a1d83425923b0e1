#pragma once

// C++20 coroutines over the callback API: `co_await locks.async_acquire(...)`.
//
// The awaiters below are the whole integration: the library brings no task
// type, scheduler or executor. Each one starts its operation in await_suspend
// and resumes the coroutine from the operation's completion callback, with the
// same result the callback would have received.
//
// Which thread resumes: the client's loop thread (the callback's thread), so
// what the coroutine does after a co_await runs on the loop until its next
// suspension. Keep that short and never block there (a blocking member of the
// client returns errc::would_deadlock on the loop); to continue on your own
// executor, co_await that executor's "schedule" right after. Two exceptions:
// async_acquire with a stop token already stopped returns errc::cancelled
// without suspending (the awaiting thread carries on), and a moved-from
// client's completions come from a thread of their own.
//
// Safe to suspend: callbacks are never invoked inside the call that started
// the operation, so await_suspend never resumes the coroutine from inside
// itself; and once the operation has started, await_suspend touches nothing in
// the coroutine frame, so a resumption on the loop thread racing with the end
// of await_suspend on the awaiting thread is harmless.
//
// Lifetime: the awaiter lives in the coroutine frame until the coroutine
// resumes; the client must outlive the co_await. Destroying a coroutine
// suspended in one is undefined behaviour, as it is for any awaiter whose
// operation cannot be abandoned: cancel it (stop token) and let it resume.
//
// Exceptions: the coroutine's body runs inside the completion callback. Have
// the task type's promise store an exception (unhandled_exception) rather than
// rethrow it; one that escapes resume() anyway is caught at the callback
// boundary like any throwing callback (reported on stderr, loop unharmed).

#include "redlock/client.hpp"

#include <chrono>
#include <coroutine>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace redlock {

namespace detail {
struct acquire_cancel_state;
}

/// `co_await client::async_acquire(...)`: a result<lock>, as acquire_async's
/// callback gets. A stop requested on the token cancels the acquisition
/// (client::cancel): what it held is released, then the coroutine resumes with
/// errc::cancelled — or with the lock, if it was granted first.
class [[nodiscard]] REDLOCK_API acquire_awaiter {
public:
    acquire_awaiter(client& owner, std::vector<std::string> resources, lock_options options,
                    std::stop_token stop);
    acquire_awaiter(acquire_awaiter&&) noexcept;
    acquire_awaiter(const acquire_awaiter&) = delete;
    auto operator=(const acquire_awaiter&) -> acquire_awaiter& = delete;
    auto operator=(acquire_awaiter&&) -> acquire_awaiter& = delete;
    ~acquire_awaiter();

    /// True (no suspension) only when the stop token is already stopped.
    [[nodiscard]] auto await_ready() const noexcept -> bool;
    void await_suspend(std::coroutine_handle<> waiting);
    auto await_resume() -> result<lock>;

private:
    client* owner_;
    std::vector<std::string> resources_;
    lock_options options_;
    std::stop_token stop_;
    std::optional<result<lock>> result_;
    std::shared_ptr<detail::acquire_cancel_state> cancel_;
    /// Registered before the acquisition starts, so that no stop is missed;
    /// destroyed on resumption, waiting out a stop callback running elsewhere.
    std::unique_ptr<std::stop_callback<std::function<void()>>> on_stop_;
};

/// `co_await client::async_extend(...)`: the validity left, as extend_async's
/// callback gets. Not cancellable (an extend is bounded by request_timeout).
class [[nodiscard]] REDLOCK_API extend_awaiter {
public:
    extend_awaiter(client& owner, lock held, std::chrono::milliseconds ttl) noexcept
        : owner_{&owner}, held_{std::move(held)}, ttl_{ttl} {}

    [[nodiscard]] static auto await_ready() noexcept -> bool { return false; }
    void await_suspend(std::coroutine_handle<> waiting);
    auto await_resume() -> result<std::chrono::milliseconds> { return std::move(*result_); }

private:
    client* owner_;
    lock held_;
    std::chrono::milliseconds ttl_;
    std::optional<result<std::chrono::milliseconds>> result_;
};

/// `co_await client::async_release(...)`: the release report, as
/// release_async's callback gets. Not cancellable (a release in flight is let
/// finish, or keys would stay behind until their TTL).
class [[nodiscard]] REDLOCK_API release_awaiter {
public:
    release_awaiter(client& owner, lock held) noexcept : owner_{&owner}, held_{std::move(held)} {}

    [[nodiscard]] static auto await_ready() noexcept -> bool { return false; }
    void await_suspend(std::coroutine_handle<> waiting);
    auto await_resume() -> result<release_report> { return std::move(*result_); }

private:
    client* owner_;
    lock held_;
    std::optional<result<release_report>> result_;
};

/// `co_await client::async_campaign(...)`: a result<leadership>, as
/// campaign_async's callback gets. A stop requested on the token cancels the
/// wait (errc::cancelled), as for async_acquire.
class [[nodiscard]] REDLOCK_API campaign_awaiter {
public:
    campaign_awaiter(client& owner, std::string name, std::string proposal,
                     campaign_options options, std::stop_token stop);
    campaign_awaiter(campaign_awaiter&&) noexcept;
    campaign_awaiter(const campaign_awaiter&) = delete;
    auto operator=(const campaign_awaiter&) -> campaign_awaiter& = delete;
    auto operator=(campaign_awaiter&&) -> campaign_awaiter& = delete;
    ~campaign_awaiter();

    [[nodiscard]] auto await_ready() const noexcept -> bool;
    void await_suspend(std::coroutine_handle<> waiting);
    auto await_resume() -> result<leadership>;

private:
    client* owner_;
    std::string name_;
    std::string proposal_;
    campaign_options options_;
    std::stop_token stop_;
    std::optional<result<leadership>> result_;
    std::shared_ptr<detail::acquire_cancel_state> cancel_;
    std::unique_ptr<std::stop_callback<std::function<void()>>> on_stop_;
};

}  // namespace redlock
