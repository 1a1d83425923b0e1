#pragma once

// Reentrant locks (lock_options::owner): which locks this client holds for
// which owner, and the acquisitions waiting for an owner's acquisition in
// flight. Loop thread only; no I/O. The hold count itself is in lock_state
// (an atomic), because a release may come from any thread.

#include "client/acquisition_request.hpp"
#include "redlock/lock.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

struct lock_state;

/// What reentry_registry::route() made of an acquisition.
struct reentry_route {
    /// Another hold of the lock its owner holds (taken already): deliver it.
    std::shared_ptr<lock_state> held;
    /// It waits for its owner's acquisition in flight: the registry resumes it.
    bool waits = false;
    /// Neither: the acquisition goes to the nodes.
    [[nodiscard]] auto goes_ahead() const noexcept -> bool { return !held && !waits; }
};

class reentry_registry {
public:
    /// Gets an acquisition back that waited for its owner's acquisition in
    /// flight, once that has ended (`cancelled` false: route it again), or once
    /// it was cancelled (true).
    using resume_fn = std::function<void(acquisition_request, bool cancelled)>;

    reentry_registry() = default;
    explicit reentry_registry(resume_fn resume) : resume_{std::move(resume)} {}

    /// Where an acquisition goes. Without an owner it goes ahead, untouched.
    /// With one: another hold of the lock held for its owner, or a wait (moved
    /// from `request`) for the owner's acquisition of it in flight; else it
    /// goes ahead, and `request.done` now also records what it gets here.
    [[nodiscard]] auto route(acquisition_request& request) -> reentry_route {
        const auto& owner = request.options.owner;
        if (!owner || owner->empty()) return {};  // not reentrant: the usual acquisition
        return route_owned(request);
    }

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
    auto route_owned(acquisition_request& request) -> reentry_route;
    void sweep();

    std::unordered_map<std::string, entry> entries_;
    std::size_t swept_at_ = 64;
    resume_fn resume_;
};

}  // namespace redlock::detail
