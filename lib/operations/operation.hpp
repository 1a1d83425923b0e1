#pragma once

#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "transport/callback_guard.hpp"
#include "transport/node_connection.hpp"
#include "transport/timer_queue.hpp"
#include "redlock/error.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::detail {

class op_context;
struct handoff_offer;
struct lock_state;
struct script;

/// One acquire, release or extend in flight: a small state machine fed with
/// replies, timeouts and timer expiries, all on the loop thread.
///
/// It lives until it has delivered its result *and* every request it sent has
/// completed (each completes exactly once: reply, timeout, unreachable or
/// stopped), so the connections never hold a dangling sink.
class operation : public reply_sink {
public:
    explicit operation(op_context& ctx) noexcept : ctx_{ctx} {}
    operation(const operation&) = delete;
    auto operator=(const operation&) -> operation& = delete;
    virtual ~operation() = default;

    virtual void start() = 0;
    /// Ends the operation early (shutdown, user cancel). Idempotent.
    virtual void cancel(errc why) = 0;

    /// The acquisition ticket of an acquire_op; 0 for every other operation.
    [[nodiscard]] virtual auto ticket() const noexcept -> std::uint64_t { return 0; }

    // Links in the core's registry of live operations: intrusive, so that
    // registering an operation allocates nothing.
    operation* prev_ = nullptr;
    operation* next_ = nullptr;

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
    auto send(std::size_t node, const encoded_command& command, std::uint32_t tag) -> std::uint32_t;
    /// Gives up on the reply to request `number` on `node` if it is still to
    /// come: handle() will not hear of it, and it no longer keeps us alive.
    void disown(std::size_t node, std::uint32_t number) noexcept;
    /// A call of `s` with KEYS = `keys` and ARGV = `args`: EVALSHA, or EVAL
    /// (which also caches the script on the node) when `eval` is set. An
    /// operation that gets NOSCRIPT back sends the EVAL form to that node.
    [[nodiscard]] static auto script_call(const script& s, bool eval,
                                          std::span<const std::string_view> keys,
                                          std::initializer_list<std::string_view> args)
        -> encoded_command;
    [[nodiscard]] static auto script_call(const script& s, bool eval,
                                          std::initializer_list<std::string_view> keys,
                                          std::initializer_list<std::string_view> args)
        -> encoded_command {
        return script_call(s, eval, std::span<const std::string_view>{keys.begin(), keys.size()},
                           args);
    }
    /// A semaphore's lease: which permits a release names (the one held when it
    /// is known, else all; or all but the one held, for an acquisition's strays).
    enum class permit_scope : std::uint8_t { held, all_but_held };
    /// The compare-and-delete of `lock` on one node. A single resource's also
    /// wakes its waiters there (as the lock's wait mode says) and removes
    /// `waiter_id`'s entry from the queue. With a `successor` (an exclusive lock
    /// on one resource only), it hands the key to that waiter where it is first
    /// in line instead (the hand-off).
    [[nodiscard]] auto release_call(const lock_state& lock, bool eval, std::string_view waiter_id,
                                    permit_scope scope = permit_scope::held,
                                    const handoff_offer* successor = nullptr) const
        -> encoded_command;
    /// A semaphore's keys: the permit-count key, and the prefix of the permit
    /// keys (key_prefix + resource + "|permit|", then the permit's number).
    [[nodiscard]] auto permit_count_key(const lock_state& lock) const -> std::string;
    [[nodiscard]] auto permit_key_prefix(const lock_state& lock) const -> std::string;
    /// The permit keys a command names: the one held (when known and `scope`
    /// is held), else every one but the one held.
    [[nodiscard]] auto permit_keys(const lock_state& lock, permit_scope scope) const
        -> std::vector<std::string>;
    /// Strings joined, on the stack when short (the usual key): a key made
    /// for one command costs no allocation.
    class joined_text {
    public:
        joined_text(std::string_view a, std::string_view b, std::string_view c = {});
        joined_text(const joined_text&) = delete;
        auto operator=(const joined_text&) -> joined_text& = delete;
        ~joined_text() = default;
        [[nodiscard]] auto view() const noexcept -> std::string_view { return view_; }

    private:
        std::array<char, 192> small_;
        std::string large_;
        std::string_view view_;
    };
    /// The lock's wait queue, made when needed rather than kept in every lock:
    /// queue_prefix + its first resource, and "|permits" after it for a
    /// semaphore (whose waiters queue apart from the resource's lock).
    [[nodiscard]] auto queue_key(const lock_state& lock) const -> joined_text;
    /// key_prefix + each of the lock's resources, made for one command: a
    /// single key (the usual lock) on the stack.
    class lock_keys {
    public:
        lock_keys(std::string_view prefix, const std::vector<std::string>& resources);
        lock_keys(const lock_keys&) = delete;
        auto operator=(const lock_keys&) -> lock_keys& = delete;
        ~lock_keys() = default;
        [[nodiscard]] auto front() const noexcept -> std::string_view { return first_.view(); }
        [[nodiscard]] auto all() const noexcept -> std::span<const std::string_view> {
            return more_.empty() ? std::span<const std::string_view>{&single_, 1}
                                 : std::span<const std::string_view>{views_};
        }

    private:
        joined_text first_;
        std::string_view single_;
        std::vector<std::string> more_;  // every key, when there are several
        std::vector<std::string_view> views_;
    };
    [[nodiscard]] auto keys_of(const lock_state& lock) const -> lock_keys;
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
    std::size_t outstanding_ = 0;  // requests sent and not yet completed
    bool finished_ = false;        // result delivered
    bool timer_pending_ = false;   // a retry/renew timer refers to us

private:
    void on_reply(std::uint32_t tag, const reply_event& event) noexcept final;
};

}  // namespace redlock::detail
