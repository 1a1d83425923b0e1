#pragma once

#include "sansio/timing.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace redlock::detail {

/// A semaphore's round 1: each node grants at most one of K permits (or none),
/// and the attempt holds permit i only when a majority of nodes granted i —
/// then every other holder of i was refused i on a node of that majority, so
/// no two clients hold one permit, and at most K hold the semaphore. Votes for
/// different permits never add up. No I/O and no clock
/// (tests/unit/permit_tally_test.cpp enumerates every grant pattern).
class permit_tally {
public:
    permit_tally() = default;
    permit_tally(std::size_t nodes, int permits)
        : votes_(static_cast<std::size_t>(permits), 0), pending_{nodes}, needed_{quorum(nodes)} {}

    /// A node granted `permit`; anything else (refused, failed) is `none`.
    static constexpr int none = -1;
    void answer(int permit) noexcept {
        if (pending_ > 0) --pending_;
        if (permit < 0 || static_cast<std::size_t>(permit) >= votes_.size()) return;
        ++votes_[static_cast<std::size_t>(permit)];
    }

    /// The permit a majority granted, if one did.
    [[nodiscard]] auto won() const noexcept -> std::optional<int> {
        for (std::size_t i = 0; i < votes_.size(); ++i) {
            if (votes_[i] >= needed_) return static_cast<int>(i);
        }
        return std::nullopt;
    }
    /// The most votes any one permit has.
    [[nodiscard]] auto best() const noexcept -> std::size_t {
        std::size_t best = 0;
        for (const auto v : votes_) best = v > best ? v : best;
        return best;
    }
    /// No permit can reach a majority any more, whatever the others answer.
    [[nodiscard]] auto lost() const noexcept -> bool {
        if (won()) return false;
        return best() + pending_ < needed_;
    }

private:
    std::vector<std::uint16_t> votes_;
    std::size_t pending_ = 0;
    std::size_t needed_ = 1;
};

}  // namespace redlock::detail
