#pragma once

// The keys and script calls that name a lock on a node, made for one command
// at a time (a thousand locks in flight keep none of them): what acquire_op,
// extend_op and release_op send.

#include "sansio/command.hpp"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

struct handoff_offer;
struct lock_state;
struct script;

/// The prefixes a client puts before a resource, lent by op_context (views
/// into the client's configuration, which outlives every command).
struct key_space {
    std::string_view key_prefix;    ///< lock keys
    std::string_view queue_prefix;  ///< wait queues
    std::string_view fence_prefix;  ///< fence counters
    std::string_view wake_prefix;   ///< queue_prefix + "wake:": every client's channel
    /// Releases publish on "<wake_prefix><client id>" (standalone and Sentinel members'
    /// subscribers), and on the resource's shard channel "<wake_prefix><tagged resource>"
    /// (SPUBLISH: a cluster member's, in the lock's slot).
    bool publish_classic = true;
    bool publish_shard = false;
};

/// The shard channel a cluster member's releases of `lock` wake its waiters on:
/// wake_prefix + the tagged resource, so that it hashes to the lock's slot. Empty
/// without cluster members (space.publish_shard false).
[[nodiscard]] auto shard_wake_channel(const key_space& space, const lock_state& lock)
    -> std::string;
/// The same for a lock on `resource` (an election's name).
[[nodiscard]] auto shard_wake_channel(const key_space& space, std::string_view resource)
    -> std::string;
/// The prefix of the clients' wake channels, where releases publish ('' without).
[[nodiscard]] inline auto classic_wake_prefix(const key_space& space) -> std::string_view {
    return space.publish_classic ? space.wake_prefix : std::string_view{};
}

/// Strings joined, on the stack when short (the usual key): a key made for
/// one command costs no allocation.
class joined_text {
public:
    joined_text(std::initializer_list<std::string_view> parts);
    joined_text(const joined_text&) = delete;
    auto operator=(const joined_text&) -> joined_text& = delete;
    ~joined_text() = default;
    [[nodiscard]] auto view() const noexcept -> std::string_view { return view_; }

private:
    std::array<char, 192> small_;
    std::string large_;
    std::string_view view_;
};

/// A key of the lock on `resource`: prefix + tagged_resource(resource) +
/// suffix (sansio/hash_slot.hpp). Every key of one lock carries the same hash
/// tag, so all of them hash to one slot; the prefixes hold no brace
/// (config_validate), so the tag is the resource's. `resource` must be
/// taggable() (acquire_checks refuses one that is not).
[[nodiscard]] auto tagged_key(std::string_view prefix, std::string_view resource,
                              std::string_view suffix = {}) -> joined_text;

/// The lock key of each of the lock's resources (tagged_key with key_prefix):
/// a single key (the usual lock) on the stack.
class lock_keys {
public:
    lock_keys(std::string_view prefix, const std::vector<std::string>& resources);
    lock_keys(const lock_keys&) = delete;
    auto operator=(const lock_keys&) -> lock_keys& = delete;
    ~lock_keys() = default;
    [[nodiscard]] auto front() const noexcept -> std::string_view { return first_.view(); }
    [[nodiscard]] auto all() const noexcept -> std::span<const std::string_view> {
        return more_.empty() ? std::span<const std::string_view>{&single_, 1}
                             : std::span<const std::string_view>{views_};
    }

private:
    joined_text first_;
    std::string_view single_;
    std::vector<std::string> more_;  // every key, when there are several
    std::vector<std::string_view> views_;
};

/// A call of `s` with KEYS = `keys` and ARGV = `args`: EVALSHA, or EVAL (which
/// also caches the script on the node) when `eval` is set. An operation that
/// gets NOSCRIPT back sends the EVAL form to that node.
[[nodiscard]] auto script_call(const script& s, bool eval, std::span<const std::string_view> keys,
                               std::initializer_list<std::string_view> args) -> encoded_command;
[[nodiscard]] inline auto script_call(const script& s, bool eval,
                                      std::initializer_list<std::string_view> keys,
                                      std::initializer_list<std::string_view> args)
    -> encoded_command {
    return script_call(s, eval, std::span<const std::string_view>{keys.begin(), keys.size()}, args);
}

// The keys of a lock (README, "Key layout"), T = tagged_resource(its first
// resource). Every script is given each key it touches in KEYS: none is built
// inside Lua (tests/unit/scripts_declare_keys_test.cpp).

[[nodiscard]] auto keys_of(const key_space& space, const lock_state& lock) -> lock_keys;
/// A read-write lock's readers: key_prefix + T + "|readers", a sorted set.
[[nodiscard]] auto readers_key(const key_space& space, const lock_state& lock) -> joined_text;
/// The lock's wait queue: queue_prefix + T, and "|permits" after it for a
/// semaphore (whose waiters queue apart from the resource's lock).
[[nodiscard]] auto queue_key(const key_space& space, const lock_state& lock) -> joined_text;
/// The liveness hash of the queue's waiters: the queue key + "|live".
[[nodiscard]] auto live_key(const key_space& space, const lock_state& lock) -> joined_text;
/// The offers of the queue's exclusive waiters (the hand-off across clients):
/// the queue key + "|offer".
[[nodiscard]] auto offer_key(const key_space& space, const lock_state& lock) -> joined_text;
/// fence_prefix + T: the (single-resource) lock's fence counter.
[[nodiscard]] auto fence_key(const key_space& space, const lock_state& lock) -> std::string;

/// A semaphore's keys: the permit-count key (key_prefix + T + "|permits"), and
/// permit i's key (key_prefix + T + "|permit|" + i).
[[nodiscard]] auto permit_count_key(const key_space& space, const lock_state& lock) -> std::string;
/// Which permits a command names: the one held when it is known, else all; all
/// but the one held, for an acquisition's strays; or every one (the grant).
enum class permit_scope : std::uint8_t { held, all_but_held, all };
[[nodiscard]] auto permit_keys(const key_space& space, const lock_state& lock, permit_scope scope)
    -> std::vector<std::string>;

/// The compare-and-delete of `lock` on one node. A single resource's also wakes
/// its waiters there (as the lock's wait mode says) and removes `waiter_id`'s
/// entry from the queue. With a `successor` (an exclusive lock on one resource
/// only), it hands the key to that waiter where it is first in line instead
/// (the hand-off). `leaving`: an exclusive waiter's leaving the queue, which
/// releases whatever value of its offer a release handed it (not lock.value).
[[nodiscard]] auto release_call(const key_space& space, const lock_state& lock, bool eval,
                                std::string_view waiter_id, permit_scope scope = permit_scope::held,
                                const handoff_offer* successor = nullptr, bool leaving = false)
    -> encoded_command;

}  // namespace redlock::detail
