#pragma once

// Who leads an election, from what each node answered (client::leader and the
// observers, README "Leader election"). Pure: the answers in, the view out.
//
// A node votes for the leader (term, lock value) when its lock key holds a
// writer's value and its leader key names that same lock value: a leader key
// left behind by an earlier leader (one that crashed) names another value and
// counts for nobody. A leader is one a majority vote for. Its value is the
// newest proclamation a majority of those nodes have reached: the quorum-th
// highest proclamation number among them (a proclamation still on its way, or
// one that reached only a minority, is not reported). Its validity is how long
// a majority of them keep the lock key: the quorum-th longest TTL.

#include "redlock/election.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace redlock::detail {

/// One node's answers, read in one round trip.
struct node_election {
    bool answered = false;
    std::optional<std::string> lock_value;         ///< GET of the lock key
    std::optional<std::chrono::milliseconds> ttl;  ///< its PTTL, when it has one
    std::optional<std::uint64_t> leader_term;      ///< the leader key's fields
    std::optional<std::string> leader_lock;
    std::optional<std::uint64_t> leader_seq;
    std::optional<std::string> leader_value;
    std::optional<std::uint64_t> counter;  ///< the fence counter
};

[[nodiscard]] auto tally_election(std::string name, std::span<const node_election> nodes,
                                  std::size_t quorum) -> election_view;

}  // namespace redlock::detail
