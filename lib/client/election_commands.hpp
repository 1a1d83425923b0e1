#pragma once

// The pure half of the election (README, "Leader election"): the keys, the
// commands sent to every node and what is made of the answers. T = the
// election name's tagged form (README, "Key layout"):
//
//   key_prefix + T                 the leadership lock (an exclusive lock on the name)
//   key_prefix + T + "|leader"     a hash: term, lock (the leader's lock value),
//                                  seq (proclamations in the term), value
//   key_prefix + T + "|observers"  a hash: observer id -> expiry (ms, node clock)
//   fence_prefix + T               the fence counter: the terms
//
// The leader key has no TTL: a resign deletes it, and one left by a leader that
// crashed names a lock value nobody holds, so it counts for nobody
// (election_tally.hpp) until the next leader overwrites it.

#include "operations/lock_commands.hpp"
#include "operations/probe_op.hpp"
#include "redlock/config.hpp"
#include "redlock/election.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// How long an observer's entry lives unless refreshed (every third of it).
inline constexpr std::chrono::milliseconds observer_ttl{30'000};

/// What is wrong with an election's name, or empty.
[[nodiscard]] auto election_problem(const std::string& name) -> std::string;

/// Proclaims `value` as proclamation `seq` of `term` where the lock key holds
/// `lock_value` (answer 1; 0 where it does not), and tells the live observers.
[[nodiscard]] auto proclaim_commands(const key_space& space, const std::string& name,
                                     std::string_view lock_value, std::uint64_t term,
                                     std::uint64_t seq, std::string_view value)
    -> std::vector<std::vector<std::string>>;
/// How many nodes answered 1 to a proclaim, and how many 0.
struct write_count {
    std::size_t done = 0;
    std::size_t refused = 0;
};
[[nodiscard]] auto count_writes(const std::vector<node_probe>& probes) -> write_count;

/// The lock key, its PTTL, the leader key's fields, the fence counter: one
/// round trip. With `observer` not empty, registers it first (for
/// observer_ttl), so that the next change is published to it.
[[nodiscard]] auto leader_commands(const client_config& config, const std::string& name,
                                   std::string_view observer = {})
    -> std::vector<std::vector<std::string>>;
/// The observer's registration alone (its refresh) and its removal.
[[nodiscard]] auto watch_commands(const client_config& config, const std::string& name,
                                  std::string_view observer)
    -> std::vector<std::vector<std::string>>;
[[nodiscard]] auto unwatch_commands(const client_config& config, const std::string& name,
                                    std::string_view observer)
    -> std::vector<std::vector<std::string>>;
/// The view from leader_commands' answers (the registration's, if any, first).
[[nodiscard]] auto parse_leader(std::string name, std::size_t quorum,
                                const std::vector<node_probe>& probes) -> election_view;

}  // namespace redlock::detail
