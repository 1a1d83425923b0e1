#pragma once

// Redis Cluster's key → slot rule (CRC16/XMODEM of the key's hash tag, mod
// 16384), and the hash tag every key of one lock shares, so that a lock's
// commands reach one node of a cluster member.

#include <cstdint>
#include <string>
#include <string_view>

namespace redlock::detail {

inline constexpr std::uint16_t cluster_slots = 16384;

/// The part of `key` Redis hashes: the text between the first '{' and the
/// first '}' after it when that text is not empty, else the whole key.
[[nodiscard]] auto hash_tag_of(std::string_view key) noexcept -> std::string_view;

/// The slot of `key` (0..16383), as CLUSTER KEYSLOT computes it.
[[nodiscard]] auto key_slot(std::string_view key) noexcept -> std::uint16_t;

/// Whether `resource` has a hash tag of its own (a non-empty "{...}").
[[nodiscard]] auto has_own_hash_tag(std::string_view resource) noexcept -> bool;

/// Whether every key made from `resource` (tagged_resource) hashes to one
/// slot. False only for a resource that begins with '}' and has no hash tag of
/// its own: "{" + resource + "}" would then hold an empty tag, which Redis
/// ignores. Such a resource is refused (acquire_checks).
[[nodiscard]] auto taggable(std::string_view resource) noexcept -> bool;

/// How a resource appears inside every key of its lock: as it is when it has a
/// hash tag of its own (resources that share one share a slot, so
/// acquire_all can span them), else wrapped as "{resource}" (so "x" and "{x}"
/// name the same lock). A prefix without braces before it and any suffix after
/// it leave the tag, and so the slot, unchanged: every key of one lock hashes
/// to one slot. `resource` must be taggable().
[[nodiscard]] auto tagged_resource(std::string_view resource) -> std::string;

/// The slot of every key of `resource`'s lock: key_slot(prefix +
/// tagged_resource(resource)), without building the key.
[[nodiscard]] auto resource_slot(std::string_view resource) noexcept -> std::uint16_t;

/// The inverse of tagged_resource, for reading keys back (client::list): the resource that
/// `tagged` (T of a key) names. "{orders:42}" gives "orders:42"; a T with a brace inside its
/// outer pair ("{a}b}", "{a{b}") or with a tag of its own elsewhere ("{user:7}:cart") is
/// returned as it is, which names the same lock (tagged_resource keeps it unchanged). Always
/// tagged_resource(untagged_resource(t)) == t for a T of our layout (has_own_hash_tag(t)).
[[nodiscard]] auto untagged_resource(std::string_view tagged) -> std::string;

}  // namespace redlock::detail
