#pragma once

#include "redlock/error.hpp"
#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "transport/callback_guard.hpp"
#include "transport/timer_queue.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace redlock::detail {

class op_context;

/// One acquire, release, extend or probe in flight: a small state machine fed
/// with replies, timeouts and timer expiries, all on the loop thread. What
/// every one of them needs, and nothing else: the requests it sends (and
/// disowns), its timers, the delivery of its result, and its end.
///
/// It lives until it has delivered its result *and* every request it sent has
/// completed (each completes exactly once: reply, timeout, unreachable or
/// stopped), so the connections never hold a dangling sink.
class operation : public reply_sink {
public:
    explicit operation(op_context& ctx) noexcept : ctx_{ctx} {}
    operation(const operation&) = delete;
    auto operator=(const operation&) -> operation& = delete;
    ~operation() override = default;

    virtual void start() = 0;
    /// Ends the operation early (shutdown, user cancel). Idempotent.
    virtual void cancel(errc why) = 0;

    /// The acquisition ticket of an acquire_op; 0 for every other operation.
    [[nodiscard]] virtual auto ticket() const noexcept -> std::uint64_t { return 0; }

protected:
    /// Tags carry (attempt, kind, node) so a reply finds its context.
    [[nodiscard]] static constexpr auto make_tag(std::uint32_t attempt, std::uint32_t kind,
                                                 std::size_t node) noexcept -> std::uint32_t {
        return (attempt << 12) | (kind << 8) | static_cast<std::uint32_t>(node);
    }
    [[nodiscard]] static constexpr auto tag_attempt(std::uint32_t tag) noexcept -> std::uint32_t {
        return tag >> 12;
    }
    [[nodiscard]] static constexpr auto tag_kind(std::uint32_t tag) noexcept -> std::uint32_t {
        return (tag >> 8) & 0xF;
    }
    [[nodiscard]] static constexpr auto tag_node(std::uint32_t tag) noexcept -> std::size_t {
        return tag & 0xFF;
    }

    /// Queues `command` on `node`; handle() hears of it exactly once, unless
    /// disowned. A fan-out encodes its command once and sends the same bytes to
    /// every node. Returns the request's number on that node's connection.
    /// `replicated`: a write (a grant, a fence confirm, an extend) that a member
    /// with wait_replicas counts only once its replicas have it.
    auto send(std::size_t node, const encoded_command& command, std::uint32_t tag,
              bool replicated = false) -> std::uint32_t;
    /// Gives up on the reply to request `number` on `node` if it is still to
    /// come: handle() will not hear of it, and it no longer keeps us alive.
    void disown(std::size_t node, std::uint32_t number) noexcept;
    virtual void handle(std::uint32_t tag, const reply_event& event) = 0;

    /// Hands the result to the user's callback, once; the callback is consumed.
    /// A callback that throws cannot skip the bookkeeping that follows.
    template <class Callback, class Result>
    static void deliver(Callback& callback, Result&& outcome) noexcept {
        auto cb = std::move(callback);
        callback = nullptr;
        if (cb) call_guarded([&] { cb(std::forward<Result>(outcome)); });
    }

    /// Deletes this operation if nothing refers to it any more. Must be the
    /// last thing an entry point does.
    void maybe_retire() noexcept;

    /// Runs `fn` on the loop thread after `delay` (0: on a later loop turn —
    /// how a result is delivered never inside the call that asked for it), and
    /// keeps this operation alive until then. Returns the timer's key, for a
    /// timer that may be cancelled (then clear timer_pending_ too).
    template <class F>
    auto after(std::chrono::milliseconds delay, F fn) -> timer_queue::key {
        timer_pending_ = true;
        // One lambda around `fn` (not a std::function in a std::function): a small
        // one stays in the timer's inline buffer, allocation-free.
        return timers().schedule(delay, [this, fn = std::move(fn)]() mutable {
            timer_pending_ = false;
            fn();
            maybe_retire();
        });
    }
    [[nodiscard]] auto timers() noexcept -> timer_queue&;

    op_context& ctx_;
    /// The hash slot of the keys this operation's commands name (every key of a
    /// lock shares one): a cluster member sends them to the slot's master.
    std::uint16_t slot_ = 0;
    bool finished_ = false;       // result delivered
    bool timer_pending_ = false;  // a retry/renew timer refers to us

private:
    friend class operation_list;
    /// Links in the client's list of live operations (operation_list): intrusive,
    /// so that registering an operation allocates nothing.
    struct registry_hook {
        operation* prev = nullptr;
        operation* next = nullptr;
    };

    void on_reply(std::uint32_t tag, const reply_event& event) noexcept final;

    // Requests sent and not yet completed (or disowned): counted by send(),
    // disown() and on_reply() only, so that no operation retires early.
    std::size_t outstanding_ = 0;
    registry_hook hook_;
};

}  // namespace redlock::detail
