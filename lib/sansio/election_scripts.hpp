#pragma once

// The election's Lua (README, "Leader election"; the keys are in
// client/election_commands.hpp). Pure text: what runs on the nodes is reviewed
// here, beside the lock's scripts.

#include "sansio/scripts.hpp"

#include <span>
#include <string_view>

namespace redlock::detail {

/// The election's keys beside its lock key (client/election_commands.hpp).
inline constexpr std::string_view leader_key_suffix = "|leader";
inline constexpr std::string_view observers_key_suffix = "|observers";

/// Proclaim. KEYS lock key, leader key, observers' hash; ARGV[1] the leader's
/// lock value, ARGV[2] the wake channel prefix ('' for none), ARGV[3] the shard
/// channel ('' for none), ARGV[4] term, ARGV[5] seq, ARGV[6] value. Returns 1 if
/// done (or already superseded), else 0. Sent as EVAL. It tells the observers
/// (lua_pieces.hpp, tell_observers_fn). An abdication rides in the campaign
/// lock's release (scripts.hpp, abdicate_release_wake_script).
[[nodiscard]] auto elect_write_source() -> std::string_view;
/// An observer's registration. KEYS[1] the observers' hash; ARGV[1] observer
/// id, ARGV[2] ttl ms. Sent as EVAL.
[[nodiscard]] auto watch_source() -> std::string_view;

/// A campaign's fencing confirm, which is also its first proclamation (one
/// round, not two). KEYS lock key, fence counter, leader key, observers' hash;
/// ARGV[1] lock value, ARGV[2] token (the term), ARGV[3] wake channel prefix
/// and ARGV[4] shard channel (as elect_write's), ARGV[5] the proposal. Raises the counter to the
/// token as fence_confirm_script does; where the lock key holds our value, stores proclamation 0 of
/// the term (unless this leader already proclaimed there), tells the observers and returns 1, else
/// returns 0.
[[nodiscard]] auto fence_confirm_proclaim_script() -> const script&;

/// Every source above, for the test that every key a script touches is
/// declared in its KEYS.
[[nodiscard]] auto election_scripts() -> std::span<const std::string_view>;

}  // namespace redlock::detail
