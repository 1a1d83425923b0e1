#pragma once

// The decisions of one extension, with no I/O: the verdict from the nodes'
// answers, why it failed, which nodes to repair, and the new deadline from
// the times passed in. tests/unit/release_extend_decision_test.cpp plays every
// answer order on 1, 3, 5 and 7 nodes.

#include "sansio/quorum_tally.hpp"
#include "redlock/error.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace redlock::detail {

/// What one node said to the extend script.
enum class extend_answer : std::uint8_t {
    extended,     ///< 1: ours, TTL raised
    other_value,  ///< 0: the key holds another value
    missing,      ///< -1: no key (restarted or evicted)
    failed,       ///< an error, a timeout, unreachable
};

class extend_decision {
public:
    explicit extend_decision(std::size_t nodes) : tally_{nodes}, missing_(nodes, false) {}

    /// Node `node` answered while the question was open. Returns the verdict:
    /// won once a majority confirmed, lost once that became impossible.
    [[nodiscard]] auto on_answer(std::size_t node, extend_answer a) -> quorum_tally::verdict;
    /// The verdict is known: later answers are not counted.
    [[nodiscard]] auto open() const noexcept -> bool { return open_; }

    /// Why a lost verdict failed: a majority that answered "not ours" is
    /// definite (not_held); otherwise too few answered (quorum_unreachable).
    [[nodiscard]] auto failure() const noexcept -> errc;

    /// The nodes to put the key back on, once the extension has succeeded:
    /// those that answered "missing". Never counted toward any quorum.
    [[nodiscard]] auto missing(std::size_t node) const noexcept -> bool {
        return node < missing_.size() && missing_[node];
    }
    /// After a success, a straggler that answers "missing" is repaired too.
    void mark_extended() noexcept { extended_ = true; }
    [[nodiscard]] auto repairs_late(extend_answer a) const noexcept -> bool {
        return extended_ && a == extend_answer::missing;
    }

    [[nodiscard]] auto tally() const noexcept -> const quorum_tally& { return tally_; }

    /// The deadline after a won verdict, or why there is none.
    struct deadline_outcome {
        std::optional<std::chrono::steady_clock::time_point> deadline;
        const char* why = nullptr;  ///< when there is no deadline (errc::not_held)
    };
    struct deadline_inputs {
        bool adopted = false;  ///< validity unknown here (client::adopt)
        std::chrono::steady_clock::time_point old_deadline;
        std::chrono::steady_clock::time_point started;  ///< first request sent
        std::chrono::steady_clock::time_point now;      ///< majority confirmed
        std::chrono::milliseconds ttl{0};
        /// The least TTL left that the confirming majority reported (the
        /// scripts never shorten one, so it may exceed ttl); unset: ttl.
        std::optional<std::chrono::milliseconds> confirmed_left;
        double drift_factor = 0.01;
        std::chrono::milliseconds drift_floor{2};
    };
    [[nodiscard]] static auto new_deadline(const deadline_inputs& in) -> deadline_outcome;

private:
    quorum_tally tally_;
    std::vector<bool> missing_;
    bool open_ = true;
    bool extended_ = false;
};

}  // namespace redlock::detail
