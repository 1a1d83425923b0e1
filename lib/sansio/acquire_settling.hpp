#pragma once

// The settling hold of an acquisition: a fresh client's first grants wait for the nodes
// whose first connection is still under way.
//
// Why: a member still connecting (a cluster member reading its first slot map, then
// connecting to the slot's master) answers later than the others. Deciding at the first
// majority leaves the lock off that member; a one-shot process (`redlock acquire`) then
// exits, and a later failover of one member of that bare majority loses the lock. The wait
// is bounded: by a limit from the attempt's start (acquire_settings::settle_limit, and half
// the TTL: validity is counted from the attempt's start), and it ends as soon as the last
// settling node answers. A node that failed its first connection is no longer settling:
// nobody waits for a node that is down. tests/unit/acquire_settling_test.cpp plays every
// answer order on five nodes for every set of settling nodes.

#include "sansio/node_outcomes.hpp"

#include <chrono>
#include <cstddef>
#include <optional>

namespace redlock::detail {

/// Which nodes are still making their first connection: a handshake, a cluster member's
/// first slot map, a Sentinel member's first master. Asked only when a majority granted
/// before every node answered.
class settling_nodes {
public:
    [[nodiscard]] virtual auto settling(std::size_t node) const -> bool = 0;

protected:
    settling_nodes() = default;
    settling_nodes(const settling_nodes&) = default;
    auto operator=(const settling_nodes&) -> settling_nodes& = default;
    ~settling_nodes() = default;
};

/// One attempt's hold (acquire_decision owns one).
class settle_hold {
public:
    struct step {
        bool wait = false;  ///< do not decide yet
        /// A wait begins: arm the grace timer for this long.
        std::optional<std::chrono::milliseconds> grace;
        bool cancel_timer = false;  ///< a wait ended before its timer
    };

    /// A majority granted, `took` after the attempt's start. Wait while a node not yet heard
    /// (status cancelled in `heard`: no answer, no hand-off) is settling, up to `limit` from
    /// the start; none (nullptr): nothing settles.
    [[nodiscard]] auto on_won(const settling_nodes* settling, const node_outcomes& heard,
                              std::chrono::milliseconds took, std::chrono::milliseconds limit)
        -> step;
    /// The grace timer fired (`timer`), or the attempt was cancelled: whether a wait was on.
    /// After the timer, no other wait in this attempt.
    auto end(bool timer) noexcept -> bool;
    void reset() noexcept { holding_ = expired_ = false; }

private:
    bool holding_ = false;
    bool expired_ = false;
};

}  // namespace redlock::detail
