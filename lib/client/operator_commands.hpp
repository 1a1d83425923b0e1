#pragma once

// The pure half of client::force_release, client::audit and client::check_fence:
// the commands they send to every node and what they make of the answers
// (client.cpp runs the probe in between, as for status). Key layout (README,
// "Key layout"), T = the resource's tagged form: besides the lock's own keys, a
// break writes key_prefix + T + "|broken" (a hash: broken value -> "<breaker>:
// <reason>", kept as long as the longest hold it broke, so that the broken
// holders' renewals learn why) and appends to key_prefix + T + "|audit" (a
// stream capped near audit_length entries).

#include "operations/probe_op.hpp"
#include "redlock/config.hpp"
#include "redlock/operator_tools.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// About how many entries a resource's audit stream keeps (XADD MAXLEN ~).
inline constexpr std::size_t audit_length = 1000;

/// The Lua of break_commands, for the test that every key a script touches is
/// declared in its KEYS.
[[nodiscard]] auto operator_scripts() -> std::span<const std::string_view>;

/// What is wrong with a break's arguments, or empty.
[[nodiscard]] auto break_problem(std::string_view reason, const force_release_options& options)
    -> std::string;

/// One script per node: delete the writer, the readers and (with
/// options.permits) the permits, leave the tombstone, append to the audit
/// stream. `wall_ms`: the breaker's clock, the same entry time on every node.
[[nodiscard]] auto break_commands(const client_config& config, const std::string& resource,
                                  std::string_view reason, std::string_view breaker,
                                  const force_release_options& options, std::int64_t wall_ms)
    -> std::vector<std::vector<std::string>>;
[[nodiscard]] auto parse_break(std::string resource, std::size_t quorum,
                               std::vector<node_probe> probes) -> break_report;

/// The newest `limit` entries of the resource's audit stream.
[[nodiscard]] auto audit_commands(const client_config& config, const std::string& resource,
                                  std::size_t limit) -> std::vector<std::vector<std::string>>;
[[nodiscard]] auto parse_audit(std::string resource, std::size_t quorum,
                               std::vector<node_probe> probes) -> audit_log;

/// The fence counter, the lock key's value and its TTL.
[[nodiscard]] auto fence_check_commands(const client_config& config, const std::string& resource)
    -> std::vector<std::vector<std::string>>;
[[nodiscard]] auto parse_fence_check(std::string resource, std::uint64_t token, std::size_t quorum,
                                     std::vector<node_probe> probes) -> fence_check;

/// HGET of the tombstone: why `value`'s hold was broken, if it was (the
/// watchdog asks when a renewal finds the lock gone).
[[nodiscard]] auto tombstone_commands(const client_config& config, const std::string& resource,
                                      const std::string& value)
    -> std::vector<std::vector<std::string>>;
/// "broken by <breaker>: <reason>" from the first node that knows, or empty.
[[nodiscard]] auto parse_tombstone(const std::vector<node_probe>& probes) -> std::string;

}  // namespace redlock::detail
