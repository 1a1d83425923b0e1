#pragma once

// What client::status sends to every node and what it makes of the answers
// (client::check's are in diagnostics_members.hpp). The commands and the parsers
// are declared together because a parser reads the replies by position: each
// list and its parser change together, in diagnostics.cpp. client.cpp runs the
// probe between them.

#include "operations/probe_op.hpp"
#include "redlock/config.hpp"
#include "redlock/diagnostics.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// The Lua of status_commands and semaphore_commands (sent as EVAL), for the
/// test that every key a script touches is declared in its KEYS.
[[nodiscard]] auto diagnostics_scripts() -> std::span<const std::string_view>;

/// GET value, PTTL, GET fencing counter, and a read-only script listing the
/// live readers with their TTLs: what every node is asked about `resource`.
[[nodiscard]] auto status_commands(const client_config& config, const std::string& resource)
    -> std::vector<std::vector<std::string>>;

/// Every node's view of the resource from its replies to status_commands, and
/// the holder (or the readers) at least `quorum` of them agree on.
[[nodiscard]] auto parse_status(std::string resource, std::size_t quorum,
                                std::vector<node_probe> probes) -> lock_status;

/// One read-only script: the permit count the node knows, and every held
/// permit of `permits` with its value and TTL.
[[nodiscard]] auto semaphore_commands(const client_config& config, const std::string& resource,
                                      int permits) -> std::vector<std::vector<std::string>>;

/// Every node's view of each permit from its replies to semaphore_commands,
/// and the holder at least `quorum` of them agree on, per permit.
[[nodiscard]] auto parse_semaphore(std::string resource, int permits, std::size_t quorum,
                                   std::vector<node_probe> probes) -> semaphore_status;

}  // namespace redlock::detail
