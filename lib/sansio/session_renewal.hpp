#pragma once

// The decisions of a session's renewal, with no I/O. One round sends every
// lock of the session to every node in one script call; each node answers,
// for each lock, whether it extended it, holds another value or has no key —
// or the node failed as a whole. This decides, from those answers and the
// times passed in, which locks are renewed (and until when), which are lost on
// their own (a majority no longer holds them), which keys to put back where
// they went missing, when the next round goes out, and whether the session is
// lost. session_keeper is the shell. tests/unit/session_renewal_test.cpp plays
// every combination of answers on 1, 3, 5 and 7 nodes.
//
// The rules are the single lock's (renewal_decision, extend_decision), per
// lock: renewed when a majority extended it before its validity ended, its
// new validity counted from the round's start; lost when so many nodes said
// no that no majority can say yes; else undecided, and the round is retried
// soon. The session is lost when a lock's validity ends with no renewal
// through: the locks share their renewals, so that is the session failing.

#include "redlock/error.hpp"
#include "sansio/reply.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace redlock::detail {

struct session_settings {
    std::size_t nodes = 1;
    std::chrono::milliseconds ttl{0};
    double renew_fraction = 1.0 / 3.0;
    std::chrono::milliseconds request_timeout{50};
    double drift_factor = 0.01;
    std::chrono::milliseconds drift_floor{2};
};

/// What one node said about one lock of the round.
enum class session_answer : std::uint8_t {
    extended,     ///< ours, TTL raised
    other_value,  ///< another value holds a key of it
    missing,      ///< a key of it is gone (restarted, evicted, expired)
    failed,       ///< no answer about it: its part of the round failed on that node
};

/// One node's reply to the round: an answer per lock, in the round's order
/// (`failed` for a lock whose part of the round failed there); nullopt when
/// the node failed as a whole (error, timeout, unreachable, a reply of
/// another shape). `status` and `cause` say how the first failure came.
struct session_node_reply {
    std::optional<std::vector<session_answer>> answers;
    node_status status = node_status::ok;  ///< why not, when answers is nullopt
    std::string cause;
};

/// One node's reply to the session script, read per lock: a lock of `keys[i]`
/// keys (several for a lock over several resources) is extended there only if
/// every key of it was, held by another value if any key is, else missing.
/// Anything but an array of 1, 0 and -1, one per key, is a failed node.
[[nodiscard]] auto session_reply_of(const reply_event& event, std::span<const std::size_t> keys)
    -> session_node_reply;

/// Puts `part`, a node's reply to the call holding locks [first, first +
/// count) of the round, into `node`: its reply to the whole round so far
/// (answers sized to the round's locks, all `failed` to begin with).
void merge_session_part(session_node_reply& node, std::size_t first, std::size_t count,
                        const session_node_reply& part);

/// The part of the round to send a node next, once it has answered `part` (of `parts`)
/// with `status` (session_reply_of's): nullopt when the node is done with this round.
/// A node gets one call of the round at a time, the next once the last is answered, so
/// that each call meets request_timeout on its own: calls sent together are answered one
/// after another, and the last of a large session's waited for all the others (10,000
/// locks, 20 calls per node, were all lost at 50 ms that way). A node that failed as a
/// whole (timeout, unreachable, cancelled) gets no more: its remaining parts stay failed,
/// and the round does not wait request_timeout again for each. An error reply (OOM, a
/// script error) ends only its own part, and the next goes out.
[[nodiscard]] auto session_next_part(node_status status, std::size_t part,
                                     std::size_t parts) noexcept -> std::optional<std::size_t>;

/// Ends a node's reply to the round: nullopt answers if no part got through.
void finish_session_reply(session_node_reply& node);

/// What the shell does once a round has every node's reply.
struct session_round_outcome {
    std::vector<std::size_t> renewed;  ///< locks (round order) valid until `deadline` now
    std::vector<std::size_t> refused;  ///< locks lost on their own
    /// (lock, node): renewed, but its key was missing there: SET NX it back.
    std::vector<std::pair<std::size_t, std::size_t>> repairs;
    /// For the renewed locks: at least this (a lock keeps a later deadline).
    std::chrono::steady_clock::time_point deadline;
    std::size_t nodes_answered = 0;
    /// When the next round goes out: a fraction of the TTL after this one's
    /// start, or soon when some lock is undecided.
    std::chrono::milliseconds next_in{0};
};

/// Decides a round that started at `sent` and has every node's reply at `now`.
/// `valid_until`: each lock's deadline as the round ends.
[[nodiscard]] auto decide_session_round(
    const session_settings& settings, std::span<const session_node_reply> replies,
    std::span<const std::chrono::steady_clock::time_point> valid_until,
    std::chrono::steady_clock::time_point sent, std::chrono::steady_clock::time_point now)
    -> session_round_outcome;

/// Each node's report on lock `index` of a round: ok (extended), refused, or
/// how the node failed. For a lock lost on its own.
[[nodiscard]] auto session_lock_reports(std::span<const session_node_reply> replies,
                                        std::size_t index) -> std::vector<node_status>;

/// The session is lost when a lock's validity has ended: true if any of
/// `valid_until` is at or before `now`.
[[nodiscard]] auto session_expired(
    std::span<const std::chrono::steady_clock::time_point> valid_until,
    std::chrono::steady_clock::time_point now) noexcept -> bool;

/// When to look again: the earliest of `valid_until` (nullopt for none).
[[nodiscard]] auto session_next_deadline(
    std::span<const std::chrono::steady_clock::time_point> valid_until) noexcept
    -> std::optional<std::chrono::steady_clock::time_point>;

}  // namespace redlock::detail
