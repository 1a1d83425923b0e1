#pragma once

// Back-pressure (client_config::max_concurrent_acquisitions): how many
// acquisitions without a wait deadline may run at once, and the ones held back
// until a place frees, in arrival order. No I/O: the client asks it what to
// do and launches what it hands back.

#include "transport/event_loop.hpp"
#include "redlock/client.hpp"

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

class client_core;

/// An acquisition on its way to start: carried from another thread to the
/// loop in this one allocation, and kept as is while back-pressure holds it.
struct pending_acquire final : loop_task {
    pending_acquire(client_core& core_, client::acquire_ticket ticket_,
                    std::vector<std::string> resources_, lock_options options_,
                    client::acquire_callback done_)
        : core{core_},
          ticket{ticket_},
          resources{std::move(resources_)},
          options{std::move(options_)},
          done{std::move(done_)} {}
    void run(std::unique_ptr<loop_task> self) override;  // client_core.cpp: admits it

    client_core& core;
    client::acquire_ticket ticket;
    std::vector<std::string> resources;
    lock_options options;
    client::acquire_callback done;
};

class admission_queue {
public:
    /// `limit` 0: no limit.
    explicit admission_queue(int limit) noexcept
        : limit_{limit > 0 ? static_cast<std::size_t>(limit) : 0} {}

    /// Counted against the limit: acquisitions with a wait deadline are not —
    /// they can wait for a holder for long, and would starve the others of
    /// their places.
    [[nodiscard]] auto counted(const lock_options& options) const noexcept -> bool {
        return limit_ > 0 && !options.max_wait.has_value();
    }
    /// Must wait for its turn: no place free, or others were held back first.
    [[nodiscard]] auto must_wait(const lock_options& options) const noexcept -> bool {
        return counted(options) && (running_ >= limit_ || !held_.empty());
    }
    /// A counted acquisition starts now.
    void started() noexcept { ++running_; }
    void hold(std::unique_ptr<pending_acquire> p) {
        held_.push_back(std::move(p));
        count();
    }
    /// A counted acquisition has delivered its result. Call next() until it
    /// hands back nothing.
    void finished() noexcept {
        if (running_ > 0) --running_;
    }
    /// The next held-back acquisition whose turn has come, counted as started.
    [[nodiscard]] auto next() -> std::unique_ptr<pending_acquire> {
        if (held_.empty() || running_ >= limit_) return nullptr;
        auto p = std::move(held_.front());
        held_.pop_front();
        count();
        ++running_;
        return p;
    }
    /// Takes the held-back acquisition with `ticket` out (cancellation).
    [[nodiscard]] auto take(client::acquire_ticket ticket) -> std::unique_ptr<pending_acquire> {
        for (auto it = held_.begin(); it != held_.end(); ++it) {
            if ((*it)->ticket != ticket) continue;
            auto p = std::move(*it);
            held_.erase(it);
            count();
            return p;
        }
        return nullptr;
    }
    /// Every held-back acquisition, in order (shutdown).
    [[nodiscard]] auto drain() -> std::deque<std::unique_ptr<pending_acquire>> {
        auto all = std::exchange(held_, {});
        count();
        return all;
    }
    /// Held back now; read from any thread (client_stats).
    [[nodiscard]] auto held_back() const noexcept -> std::size_t {
        return held_gauge_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] auto running() const noexcept -> std::size_t { return running_; }

private:
    void count() noexcept { held_gauge_.store(held_.size(), std::memory_order_relaxed); }

    std::size_t limit_;
    std::size_t running_ = 0;
    std::deque<std::unique_ptr<pending_acquire>> held_;
    std::atomic<std::size_t> held_gauge_{0};
};

}  // namespace redlock::detail
