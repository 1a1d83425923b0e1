#pragma once

// Back-pressure (client_config::max_concurrent_acquisitions) as a decision:
// which acquisition may start now, which waits its turn (in arrival order),
// and when a waiting one may start. The caller starts what it is told to;
// entries are whatever the caller keeps for an acquisition that waits (the
// client's request, a test's number), named by their ticket.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace redlock::detail {

/// What admission_queue::arrive() decided for one acquisition.
enum class admission : std::uint8_t {
    start,          ///< starts now, outside the limit
    start_counted,  ///< starts now, counted: report finished() once it has delivered
    wait,           ///< kept in the queue: next() hands it back when its turn comes
};

template <class Entry>
class admission_queue {
public:
    /// `limit` 0 (or less): no limit.
    explicit admission_queue(int limit) noexcept
        : limit_{limit > 0 ? static_cast<std::size_t>(limit) : 0} {}

    /// An acquisition arrives. Counted against the limit unless `has_deadline`
    /// (lock_options::max_wait): those may wait for a holder for long and would
    /// starve the others of their places. A counted one waits while no place is
    /// free or others wait already (no overtaking); `entry` is then moved into
    /// the queue, and left alone otherwise.
    [[nodiscard]] auto arrive(std::uint64_t ticket, bool has_deadline, Entry& entry) -> admission {
        if (limit_ == 0 || has_deadline) return admission::start;
        if (running_ < limit_ && held_.empty()) {
            ++running_;
            return admission::start_counted;
        }
        held_.push_back({ticket, std::move(entry)});
        count();
        return admission::wait;
    }
    /// A counted acquisition has delivered its result: call next() until it
    /// hands back nothing.
    void finished() noexcept {
        if (running_ > 0) --running_;
    }
    /// The waiting acquisition whose turn has come, now counted as started.
    [[nodiscard]] auto next() -> std::optional<Entry> {
        if (held_.empty() || running_ >= limit_) return std::nullopt;
        std::optional<Entry> turn{std::move(held_.front().entry)};
        held_.pop_front();
        count();
        ++running_;
        return turn;
    }
    /// Takes the waiting acquisition `ticket` out (it was cancelled); nothing if
    /// it is not waiting here.
    [[nodiscard]] auto take(std::uint64_t ticket) -> std::optional<Entry> {
        for (auto it = held_.begin(); it != held_.end(); ++it) {
            if (it->ticket != ticket) continue;
            std::optional<Entry> taken{std::move(it->entry)};
            held_.erase(it);
            count();
            return taken;
        }
        return std::nullopt;
    }
    /// Every waiting acquisition, in arrival order, taken out (shutdown).
    [[nodiscard]] auto drain() -> std::vector<Entry> {
        std::vector<Entry> all;
        all.reserve(held_.size());
        for (auto& h : held_) all.push_back(std::move(h.entry));
        held_.clear();
        count();
        return all;
    }
    /// Waiting now; read from any thread (client_stats::operations).
    [[nodiscard]] auto held_back() const noexcept -> std::size_t {
        return held_gauge_.load(std::memory_order_relaxed);
    }
    /// Counted acquisitions started and not yet finished.
    [[nodiscard]] auto running() const noexcept -> std::size_t { return running_; }

private:
    struct held {
        std::uint64_t ticket;
        Entry entry;
    };
    void count() noexcept { held_gauge_.store(held_.size(), std::memory_order_relaxed); }

    std::size_t limit_;
    std::size_t running_ = 0;
    std::deque<held> held_;
    std::atomic<std::size_t> held_gauge_{0};
};

}  // namespace redlock::detail
