#pragma once

#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

/// A Lua script and the SHA-1 name Redis gives it. All scripts live in
/// scripts.cpp, shared_lock_scripts.cpp and session_scripts.cpp, where what
/// runs on the nodes is reviewed.
struct script {
    std::string_view source;
    std::string sha;
};

/// KEYS = lock keys, ARGV[1] = value. Deletes each key that still holds our
/// value. Returns how many were deleted (0: none of them was ours).
[[nodiscard]] auto release_script() -> const script&;

/// KEYS = lock keys [+ fence counter key], ARGV = value, ttl ms, '1' if the
/// last key is the fence counter. All-or-nothing: sets every lock key (NX
/// semantics for the set as a whole) or none. Returns {granted 0|1, counter}:
/// the counter is read whether or not the keys were set.
[[nodiscard]] auto acquire_script() -> const script&;

/// KEYS = lock key, fence counter key; ARGV = value, token. Raises the counter
/// to `token` if it is lower (always safe), and returns 1 if the lock key
/// still holds our value, else 0.
[[nodiscard]] auto fence_confirm_script() -> const script&;

/// KEYS = lock keys, ARGV = value, ttl ms. If every key still holds our value,
/// raises each key's TTL to `ttl` (never shortens one) and returns 1. Else it
/// changes nothing and returns 0 if some key holds another value, -1 if the
/// only problem is keys that are missing (the node restarted or evicted them).
[[nodiscard]] auto extend_script() -> const script&;

/// Waiting: acquire-or-enqueue, release-and-wake, and leaving the queue. The
/// contracts are next to their sources in scripts.cpp.
[[nodiscard]] auto wait_acquire_script() -> const script&;
[[nodiscard]] auto release_wake_script() -> const script&;
/// A campaign's lock: release_wake_script's release, with the leader hash and the
/// observers' hash after its KEYS; the leader hash is deleted first where it names
/// the lock's value, and the observers are told (resign in one call).
[[nodiscard]] auto abdicate_release_wake_script() -> const script&;
[[nodiscard]] auto dequeue_script() -> const script&;

/// Read-write locks and semaphores: a reader's grant and extend, a permit's
/// grant and extend (release_wake_script releases every kind). Contracts next
/// to their sources.
[[nodiscard]] auto shared_acquire_script() -> const script&;
[[nodiscard]] auto shared_extend_script() -> const script&;
[[nodiscard]] auto permit_acquire_script() -> const script&;
[[nodiscard]] auto permit_extend_script() -> const script&;

/// A session's renewal: KEYS = every key of its locks, ARGV = ttl ms, then
/// each key's value. Returns, per key, 1 extended, 0 another value, -1 missing.
[[nodiscard]] auto session_extend_script() -> const script&;

/// The script made from `source` (its SHA-1 computed here).
[[nodiscard]] auto make_script(std::string_view source) -> script;

/// The script made from `source`, once (its SHA-1 computed on first use).
template <const std::string_view& source>
auto cached_script() -> const script& {
    static const script s = make_script(source);
    return s;
}

/// Every script, for SCRIPT LOAD when a connection is (re)established.
[[nodiscard]] auto all_scripts() -> std::span<const script* const>;

}  // namespace redlock::detail
