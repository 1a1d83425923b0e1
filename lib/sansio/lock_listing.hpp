#pragma once

// client::list's decisions (README, "Listing locks"): which keys a node's SCAN
// returned are locks of our key layout, what each round reads of them (one
// read-only script), when a node's scan stops, and what the nodes' readings
// add up to. No I/O: operations/list_op sends the commands and feeds the replies.
//
// A key is key_prefix + T + suffix (README, "Key layout"): the lock key (no
// suffix), "|readers", "|permit|<i>" or "|permits"; T is the tagged resource,
// always with a hash tag of its own. A suffix is read off the end, so an
// own-tagged resource that ends in one (which the README warns against) reads
// as that suffix's key.

#include "redlock/diagnostics.hpp"
#include "sansio/reply.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// What a key is in the layout.
enum class key_role : std::uint8_t { lock, readers, permit, permits };

struct listed_key {
    std::string name;      ///< the key itself
    std::string tagged;    ///< T
    std::string resource;  ///< untagged_resource(T)
    key_role role = key_role::lock;
    int permit = -1;  ///< key_role::permit: the index
};

/// Which key of the layout `key` is, or nothing when it is none (another
/// prefix, no hash tag, a malformed suffix).
[[nodiscard]] auto parse_listed_key(std::string_view key, std::string_view key_prefix)
    -> std::optional<listed_key>;

/// `text` with what SCAN's MATCH treats as special (* ? [ ] \) escaped.
[[nodiscard]] auto glob_escaped(std::string_view text) -> std::string;

/// SCAN's MATCH for the locks of resources that begin with `resource_prefix`:
/// key_prefix, anything (a '{' or nothing), the prefix, anything. A superset:
/// next_scan_step keeps only the keys whose resource begins with the prefix.
[[nodiscard]] auto listing_pattern(std::string_view key_prefix, std::string_view resource_prefix)
    -> std::string;

/// A reply to SCAN: the next cursor ("0": the end) and the keys of this round.
struct scan_page {
    std::string cursor;
    std::vector<std::string> keys;
};
[[nodiscard]] auto parse_scan_page(const reply* r) -> std::optional<scan_page>;

/// One round's keys to read on one node.
struct read_batch {
    std::vector<listed_key> keys;
    /// Indexes into `keys` of the lock keys: their resource's fencing counter
    /// (fence_prefix + T) is read along, after every key of the batch.
    std::vector<std::size_t> fenced;
};

/// The read script's Lua: for each of KEYS, by its type, a string's value and
/// PTTL, a sorted set's live members with their ms left, or nothing.
[[nodiscard]] auto listing_read_source() -> std::string_view;

/// EVAL of the read script over `batch`'s keys, then its fencing counters.
[[nodiscard]] auto read_command(const read_batch& batch, std::string_view fence_prefix)
    -> std::vector<std::string>;

/// What one node holds at one key.
struct key_reading {
    listed_key key;
    std::optional<std::string> value;              ///< a string key's value
    std::optional<std::chrono::milliseconds> ttl;  ///< its TTL (unset: none)
    std::vector<node_reader> readers;              ///< a readers' set: the live readers
    std::optional<std::uint64_t> fence;            ///< a lock key: its resource's counter
};

/// The readings of `batch` from the reply to read_command (keys gone since
/// the SCAN are left out), or nothing when the reply is not the script's.
[[nodiscard]] auto parse_read_reply(const read_batch& batch, const reply* r)
    -> std::optional<std::vector<key_reading>>;

/// Why a node's scan ends before its cursor comes back to 0.
enum class scan_stop : std::uint8_t { none, limit, budget };

/// What to do with one SCAN page.
struct scan_step {
    read_batch batch;   ///< the page's keys to read (those of the layout, of the prefix)
    bool more = false;  ///< send the next SCAN, from the page's cursor
    scan_stop stopped = scan_stop::none;
};

/// `collected`: the keys this node's earlier pages gave; at most `limit` in all.
/// `budget_spent`: no new round may start.
[[nodiscard]] auto next_scan_step(const scan_page& page, std::string_view key_prefix,
                                  std::string_view resource_prefix, std::size_t collected,
                                  std::size_t limit, bool budget_spent) -> scan_step;

/// One node's scan, as list_op ends it.
struct node_scan {
    std::string node;
    bool reachable = false;
    bool complete = false;
    std::string detail;
    std::size_t keys = 0;
    std::uint64_t rounds = 0;
    std::vector<key_reading> readings;
};

/// The listing the nodes' readings add up to: each (resource, kind, permit,
/// value) held on `quorum` nodes or more is a lock, on fewer a leftover. A key
/// a node's SCAN returned twice counts once.
[[nodiscard]] auto tally_listing(std::vector<node_scan> scans, std::size_t quorum) -> lock_listing;

}  // namespace redlock::detail
