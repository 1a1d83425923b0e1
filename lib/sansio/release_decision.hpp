#pragma once

// When a release is decided, with no I/O: at a majority of deletes, or as soon
// as none is possible, the other nodes get a grace period as long again as
// the decision took (at least 1 ms) — a healthy node answers within that, and
// its report names every node — but a hung node is not waited for until
// request_timeout. tests/unit/release_extend_decision_test.cpp plays every
// answer order on 1, 3, 5 and 7 nodes.

#include "sansio/quorum_tally.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace redlock::detail {

class release_decision {
public:
    enum class step : std::uint8_t {
        wait,         ///< nothing to do yet
        start_grace,  ///< decided: start the grace timer (once)
        finish,       ///< every node answered: report now
    };

    explicit release_decision(std::size_t nodes) noexcept : tally_{nodes} {}

    /// A node answered: `deleted` if it deleted our key, otherwise it did not
    /// (not held with our value, an error, a timeout). Not called after finish.
    [[nodiscard]] auto on_answer(bool deleted) noexcept -> step {
        const auto verdict = deleted ? tally_.yes() : tally_.failed();
        if (tally_.pending() == 0) return step::finish;
        if (verdict == quorum_tally::verdict::pending || grace_started_) return step::wait;
        grace_started_ = true;
        return step::start_grace;
    }

    /// How long the grace period is, given how long the decision took.
    [[nodiscard]] static constexpr auto grace(std::chrono::milliseconds took) noexcept
        -> std::chrono::milliseconds {
        return std::max(took, std::chrono::milliseconds{1});
    }

    [[nodiscard]] auto deleted() const noexcept -> std::size_t { return tally_.yes_count(); }
    [[nodiscard]] auto needed() const noexcept -> std::size_t { return tally_.needed(); }
    [[nodiscard]] auto pending() const noexcept -> std::size_t { return tally_.pending(); }

private:
    quorum_tally tally_;
    bool grace_started_ = false;
};

}  // namespace redlock::detail
