#pragma once

// Reentrant locks (lock_options::owner): which locks this client holds for
// which owner, and the acquisitions waiting for an owner's acquisition in
// flight. Loop thread only; no I/O. The hold count itself is in lock_state
// (an atomic), because a release may come from any thread.

#include "redlock/lock.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

struct lock_state;

class reentry_registry {
public:
    /// What names one reentrant lock: its kind, permit count, owner and resources.
    [[nodiscard]] static auto key_of(const std::vector<std::string>& resources,
                                     const lock_options& options) -> std::string;

    /// The lock held for `key`, with one more hold, if it is still valid; else null.
    [[nodiscard]] auto reenter(const std::string& key) -> std::shared_ptr<lock_state>;
    /// An acquisition for `key` is in flight: a second one waits for its outcome.
    [[nodiscard]] auto in_flight(const std::string& key) const -> bool;
    /// Runs `retry(false)` once the acquisition in flight for `key` has
    /// finished, or `retry(true)` if `ticket` is cancelled first.
    void wait(const std::string& key, std::uint64_t ticket, std::function<void(bool)> retry);
    /// Cancels a waiting acquisition: true if `ticket` was waiting here.
    auto cancel(std::uint64_t ticket) -> bool;
    /// An acquisition for `key` starts.
    void begin(const std::string& key);
    /// It ended: `held` is the lock it got (null: none). Runs the waiting retries.
    void end(const std::string& key, std::shared_ptr<lock_state> held);

    /// Takes one hold of `state` unless none is left (a release took the last).
    [[nodiscard]] static auto add_hold(lock_state& state) noexcept -> bool;

private:
    struct waiter {
        std::uint64_t ticket;
        std::function<void(bool)> retry;  // true: cancelled
    };
    struct entry {
        std::weak_ptr<lock_state> held;
        std::vector<waiter> waiting;
        bool in_flight = false;
    };
    void sweep();

    std::unordered_map<std::string, entry> entries_;
    std::size_t swept_at_ = 64;
};

}  // namespace redlock::detail
