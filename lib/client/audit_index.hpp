#pragma once

// The audit across resources (client::audit with no resource; README, "Operators'
// tools"). A break records itself in its resource's stream, in the resource's slot
// (operator_commands.hpp); then the client adds the resource to an index on every
// node: key_prefix + "{~audit}|index", a sorted set of resources scored by their
// latest break (the breaker's clock, ms), capped at audit_index_length. Reading
// every break is reading the index, then each resource's stream.

#include "client/client_core.hpp"
#include "redlock/operator_tools.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace redlock::detail {

/// How many resources the index keeps (the most recently broken).
inline constexpr std::size_t audit_index_length = 1000;

/// After a break that ran on some node: puts `resource` in the index on every node,
/// then delivers `report` to `done` (what the index write did is not the break's).
void index_break(client_core& core, const std::string& resource, std::int64_t wall_ms,
                 break_report report, std::function<void(result<break_report>)> done);

/// client::audit of every resource: the `limit` most recently broken resources any
/// node's index names, each one's audit (its newest `limit` entries), merged newest
/// first. Its `resource` is empty; each entry names its own.
void audit_everything(client_core& core, std::size_t limit,
                      std::function<void(result<audit_log>)> done);

}  // namespace redlock::detail
