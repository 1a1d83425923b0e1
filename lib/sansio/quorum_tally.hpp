#pragma once

#include "redlock/error.hpp"
#include "sansio/timing.hpp"

#include <cstddef>
#include <cstdint>

namespace redlock::detail {

/// Counts the per-node outcomes of one fan-out and says as soon as the verdict
/// is known. No I/O and no clock, so every reply order is testable.
class quorum_tally {
public:
    enum class verdict { pending, won, lost };

    /// `nodes` is at most 255 (a config never names more).
    constexpr explicit quorum_tally(std::size_t nodes) noexcept
        : nodes_{static_cast<count>(nodes)}, needed_{static_cast<count>(quorum(nodes))} {}

    /// A node said yes (granted, extended, confirmed).
    constexpr auto yes() noexcept -> verdict {
        ++yes_;
        return current();
    }
    /// A node said no: held by someone else.
    constexpr auto refused() noexcept -> verdict {
        ++refused_;
        return current();
    }
    /// A node failed: error reply, timeout, unreachable. Its outcome is unknown.
    constexpr auto failed() noexcept -> verdict {
        ++failed_;
        return current();
    }
    /// A node that said no says yes after all (its key was handed to us since).
    constexpr auto refused_to_yes() noexcept -> verdict {
        if (refused_ > 0) {
            --refused_;
            ++yes_;
        }
        return current();
    }
    /// A node's outcome as reported: ok is a yes, refused a no, anything else a failure.
    constexpr auto outcome(node_status s) noexcept -> verdict {
        if (s == node_status::ok) return yes();
        if (s == node_status::refused) return refused();
        return failed();
    }

    [[nodiscard]] constexpr auto current() const noexcept -> verdict {
        if (yes_ >= needed_) return verdict::won;
        if (static_cast<std::size_t>(yes_) + pending() < needed_)
            return verdict::lost;  // a majority is now impossible
        return verdict::pending;
    }

    [[nodiscard]] constexpr auto pending() const noexcept -> std::size_t {
        return static_cast<std::size_t>(nodes_) - yes_ - refused_ - failed_;
    }
    [[nodiscard]] constexpr auto yes_count() const noexcept -> std::size_t { return yes_; }
    [[nodiscard]] constexpr auto refused_count() const noexcept -> std::size_t { return refused_; }
    [[nodiscard]] constexpr auto failed_count() const noexcept -> std::size_t { return failed_; }
    [[nodiscard]] constexpr auto needed() const noexcept -> std::size_t { return needed_; }
    /// Nodes that answered with a definite yes or no.
    [[nodiscard]] constexpr auto answered() const noexcept -> std::size_t {
        return static_cast<std::size_t>(yes_) + refused_;
    }

private:
    // Small: a thousand acquisitions in flight hold two each.
    using count = std::uint16_t;
    count nodes_;
    count needed_;
    count yes_ = 0;
    count refused_ = 0;
    count failed_ = 0;
};

}  // namespace redlock::detail
