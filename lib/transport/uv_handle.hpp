#pragma once

#include "transport/callback_guard.hpp"

#include <uv.h>

#include <cassert>
#include <functional>
#include <new>
#include <utility>

namespace redlock::detail {

/// One libuv handle of type T (uv_timer_t, uv_async_t, a union of stream types...)
/// on the heap, owned by an object of type Owner.
///
/// libuv may touch a handle until its close callback has run, so its memory is
/// freed there and nowhere else. close() closes it once: later calls, while it
/// closes or after, do nothing (an owner with several closers lets them wait
/// with close_callbacks). The owner may die before the close callback: the
/// handle is then closed for it, if need be, and the callback only frees.
/// Inside a libuv callback of the handle, owner_of(handle) is the owner.
template <class T, class Owner>
class uv_handle {
public:
    /// Runs once the handle is closed and freed; it may destroy the owner.
    using closed_callback = void (*)(Owner&);

    explicit uv_handle(Owner& owner) noexcept : owner_{&owner} {}
    uv_handle(const uv_handle&) = delete;
    auto operator=(const uv_handle&) -> uv_handle& = delete;
    ~uv_handle() { abandon(); }

    /// Allocates a handle and has `init(T*)` initialise it (uv_timer_init
    /// bound to a loop, ...). Returns init's result, UV_ENOMEM, or UV_EBUSY
    /// while the previous handle is open or closing; 0: open.
    template <class Init>
    auto open(Init&& init) noexcept -> int {
        if (box_ != nullptr) return UV_EBUSY;
        auto* b = new (std::nothrow) box{};
        if (b == nullptr) return UV_ENOMEM;
        const int rc = std::forward<Init>(init)(&b->handle);
        if (rc != 0) {
            delete b;  // never initialised: libuv does not know it
            return rc;
        }
        // Through libuv's setter: T may be a union of handle types (a TCP or pipe stream).
        uv_handle_set_data(reinterpret_cast<uv_handle_t*>(&b->handle), b);
        b->owner = owner_;
        b->holder = this;
        box_ = b;
        return 0;
    }

    /// Starts closing the open handle; `done` runs (with the owner) once it
    /// is freed. True for the call that closed it, false for any other.
    auto close(closed_callback done = nullptr) noexcept -> bool {
        if (box_ == nullptr || closing_) return false;
        closing_ = true;
        box_->done = done;
        uv_close(base(), &on_closed);
        return true;
    }

    /// The handle while open (not closing); null otherwise.
    [[nodiscard]] auto get() noexcept -> T* { return is_open() ? &box_->handle : nullptr; }
    [[nodiscard]] auto base() noexcept -> uv_handle_t* {
        return box_ == nullptr ? nullptr : reinterpret_cast<uv_handle_t*>(&box_->handle);
    }
    [[nodiscard]] auto is_open() const noexcept -> bool { return box_ != nullptr && !closing_; }
    [[nodiscard]] auto is_closing() const noexcept -> bool { return closing_; }

    /// The owner of `handle` (any libuv view of it: T*, uv_stream_t*,
    /// uv_handle_t*), from inside one of its callbacks.
    template <class H>
    [[nodiscard]] static auto owner_of(H* handle) noexcept -> Owner& {
        const box* b = static_cast<const box*>(handle->data);
        assert(b->owner != nullptr);  // libuv calls nothing but the close callback once closed
        return *b->owner;
    }

private:
    struct box {
        T handle;
        Owner* owner = nullptr;       // null once the owner is gone
        uv_handle* holder = nullptr;  // likewise
        closed_callback done = nullptr;
    };

    static void on_closed(uv_handle_t* h) noexcept {
        box* b = static_cast<box*>(h->data);
        uv_handle* holder = b->holder;
        const closed_callback done = b->done;
        delete b;
        if (holder == nullptr) return;  // abandoned by its owner
        Owner* owner = holder->owner_;
        holder->box_ = nullptr;
        holder->closing_ = false;
        if (done != nullptr) done(*owner);  // last: it may destroy the owner
    }

    /// The owner is going: the handle is closed without it and freed later.
    void abandon() noexcept {
        if (box_ == nullptr) return;
        box_->owner = nullptr;
        box_->holder = nullptr;
        if (!closing_) uv_close(base(), &on_closed);
        box_ = nullptr;
    }

    Owner* owner_;
    box* box_ = nullptr;
    bool closing_ = false;
};

/// A libuv request (uv_write_t, uv_connect_t, uv_getaddrinfo_t) kept inside
/// its owner, which outlives it: a handle's pending requests complete (with
/// UV_ECANCELED) before the handle's close callback, which the owner awaits.
template <class T, class Owner>
class uv_request {
public:
    explicit uv_request(Owner& owner) noexcept { request_.data = &owner; }
    uv_request(const uv_request&) = delete;
    auto operator=(const uv_request&) -> uv_request& = delete;
    ~uv_request() = default;

    [[nodiscard]] auto get() noexcept -> T* { return &request_; }
    /// The owner of `request`, from inside its callback.
    [[nodiscard]] static auto owner_of(T* request) noexcept -> Owner& {
        return *static_cast<Owner*>(request->data);
    }

private:
    T request_{};
};

/// Runs `fn` once on the loop thread, on a later turn of `loop`, with a
/// one-shot timer of its own: for a completion that must not run inside the
/// call that asked for it when nothing else of ours is left on the loop. The
/// timer's owner deletes itself as it fires; uv_handle frees the timer after.
/// False (and `fn` untouched) if no timer could be had.
inline auto run_later(uv_loop_t* loop, std::function<void()>& fn) noexcept -> bool {
    struct one_shot {
        uv_handle<uv_timer_t, one_shot> timer{*this};
        std::function<void()> fn;
    };
    auto* shot = new (std::nothrow) one_shot{};
    if (shot == nullptr) return false;
    if (shot->timer.open([loop](uv_timer_t* t) { return uv_timer_init(loop, t); }) != 0) {
        delete shot;
        return false;
    }
    shot->fn.swap(fn);
    uv_timer_start(
        shot->timer.get(),
        [](uv_timer_t* t) {
            one_shot* self = &decltype(one_shot::timer)::owner_of(t);
            std::function<void()> run = std::move(self->fn);
            delete self;  // closes the timer; its memory goes in the close callback
            call_guarded(run);
        },
        0, 0);
    return true;
}

}  // namespace redlock::detail
