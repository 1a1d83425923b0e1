#pragma once

// The keys a lock of each kind leaves on a node (README, "Key layout"), told apart by name,
// and which of them may still be there once every holder has released: the end-of-run
// check of the torture and CLI stress tests. For resource R, T = "{R}" (its hash tag, shared
// by every key of its lock), key prefix P, queue prefix Q:
//   P+T                 an exclusive holder's value, or the readers' marker "~readers"
//   P+T|readers         the readers: a sorted set, each scored by the end of its hold
//   P+T|permit|<i>      a semaphore's permit i
//   P+T|permits         the semaphore's K (kept by a release: it expires within a TTL)
//   Q+T, Q+T|permits    a wait queue (a sorted set)
//   Q+T|live, Q+T|permits|live   the queue's liveness hash (waiter id -> kind|expiry)
//   P+T|leader          an election's leader (term, lock, value): no TTL; a resignation
//                       deletes it, one left by a leader that did not resign stays until the
//                       next leader overwrites it (README, "Leader election")
//   P+T|observers       an election's observers (a hash: observer id -> expiry), kept
//                       30 s (observer_ttl) past each observer's last watch
// Every other one carries a TTL; fence counters live under their own prefix and never expire.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock_torture {

enum class key_shape {
    lock,
    reader_set,
    permit,
    permit_count,
    queue,
    liveness,
    leader,
    observers,
    unknown
};

[[nodiscard]] auto shape_name(key_shape shape) noexcept -> const char*;

struct key_layout {
    std::string key_prefix = "redlock:";
    std::string queue_prefix = "redlock-queue:";
};

/// The shape of `key`, for resources without a hash tag of their own and without '}' (the
/// tagged form "{R}" then ends at the first '}'); unknown for a key under either prefix
/// that no lock kind writes; nullopt for a key under neither prefix.
[[nodiscard]] auto shape_of(std::string_view key, const key_layout& layout)
    -> std::optional<key_shape>;

struct leftover_limits {
    std::int64_t longest_ttl_ms = 0;  ///< the longest lock TTL used
    std::int64_t waiter_ttl_ms = 0;   ///< lock.waiter_ttl_ms
    /// An election's observers' hash: PEXPIREd to observer_ttl (30 s) at each watch. An
    /// observer that ends cleanly removes its entry; one killed or cut off leaves it.
    std::int64_t observer_ttl_ms = 30'000;
};

/// Found on a healthy node once every holder has released (and nobody waits any more):
/// why the key is a leak, or nullopt when it may be there. Holds (lock, reader, reader set,
/// permit) must be gone: their releases delete them. The semaphore's count and the wait
/// queues may stay, as long as their TTL ends within the longest TTL (the waiter TTL for
/// queues): they are bookkeeping that nobody refreshes any more. An election's leader key may
/// stay, without a TTL: it counts for nobody once its lock is gone. `pttl_ms` is PTTL's
/// answer: -2 (gone meanwhile) is fine, -1 (no TTL) never is.
[[nodiscard]] auto leak_reason(key_shape shape, std::int64_t pttl_ms, const leftover_limits& limits)
    -> std::optional<std::string>;

}  // namespace redlock_torture
