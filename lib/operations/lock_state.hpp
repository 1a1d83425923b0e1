#pragma once

#include "redlock/lock.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace redlock::detail {

struct session_state;

/// What a lock handle and the client share. Written on the loop thread, read
/// from any thread: the mutable parts are atomics.
struct lock_state {
    // Set before the handle is handed out, immutable afterwards.
    std::vector<std::string> resources;
    std::string value;  ///< proof of ownership
    std::chrono::milliseconds ttl{0};
    /// Lock-delay: the nodes are given ttl + delay (node_ttl), the validity
    /// counts from ttl alone.
    std::chrono::milliseconds delay{0};
    [[nodiscard]] auto node_ttl() const noexcept -> std::chrono::milliseconds {
        return ttl + delay;
    }
    std::optional<std::uint64_t> fence;
    lock_kind kind = lock_kind::exclusive;
    int permits = 0;  ///< a semaphore's permit count
    int slot = -1;    ///< the permit held; -1 unknown (adopted by value)
    /// Reentrant locks: the owner, and the holds not yet released.
    std::string owner;
    std::atomic<int> holds{1};
    bool auto_renew = false;
    /// Whom the release wakes: '1' the first live waiter, 'a' all, '0' nobody.
    char wake = '1';
    /// The waiter id this lock was acquired under, if it waited: its release
    /// also removes that entry from the queues.
    std::string waiter_id;
    /// Made by client::adopt from a value acquired elsewhere: its validity is
    /// unknown here, so extend does not check it locally (the nodes' compare
    /// on the value is the check) and counts the new one from scratch.
    bool adopted = false;
    /// The session it was acquired in (lock_options::session), whose renewals
    /// keep it alive instead of the watchdog's own.
    std::weak_ptr<session_state> session;
    /// A campaign's proposal (client::campaign): its fencing confirm also stores
    /// it as the term's first proclamation, so that leading takes two rounds.
    std::shared_ptr<const std::string> proclamation;
    /// Behind a pointer: few locks have one, and every lock in flight holds this.
    std::unique_ptr<std::function<void(const lock&, const error&)>> on_lost;
    std::unique_ptr<std::function<void(const lock&, const shrink_report&)>> on_shrunk;

    // Shared with other threads.
    std::atomic<std::int64_t> valid_until_ns{0};  ///< steady_clock, since its epoch
    std::atomic<bool> released{false};
    std::atomic<bool> lost{false};
    /// Only an auto-renewed lock can be lost, so only it gets a stop state
    /// (an allocation); the others hand out tokens that are never requested.
    std::stop_source lost_source{std::nostopstate};

    /// The client's locks_held gauge (metrics.hpp), while this lock counts in
    /// it: set on the loop thread at the grant, taken away there at the
    /// release or the loss, or by the destructor when the last handle goes.
    std::shared_ptr<std::atomic<std::int64_t>> held_gauge;
    void count_held(std::shared_ptr<std::atomic<std::int64_t>> gauge) noexcept {
        gauge->fetch_add(1, std::memory_order_relaxed);
        held_gauge = std::move(gauge);
    }
    void uncount_held() noexcept {
        if (!held_gauge) return;
        held_gauge->fetch_sub(1, std::memory_order_relaxed);
        held_gauge.reset();
    }
    lock_state() = default;
    lock_state(const lock_state&) = delete;
    auto operator=(const lock_state&) -> lock_state& = delete;
    ~lock_state() { uncount_held(); }

    void set_valid_until(std::chrono::steady_clock::time_point t) noexcept {
        valid_until_ns.store(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(),
            std::memory_order_release);
    }
    [[nodiscard]] auto valid_until() const noexcept -> std::chrono::steady_clock::time_point {
        return std::chrono::steady_clock::time_point{
            std::chrono::nanoseconds{valid_until_ns.load(std::memory_order_acquire)}};
    }

    [[nodiscard]] static auto handle(std::shared_ptr<lock_state> state) -> lock {
        return lock{std::move(state)};
    }
    [[nodiscard]] static auto of(const lock& l) noexcept -> const std::shared_ptr<lock_state>& {
        return l.state_;
    }
};

}  // namespace redlock::detail
