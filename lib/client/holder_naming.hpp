#pragma once

// A `contended` acquisition's error names who holds the resource: "resource
// 'job' is held by build-7:4411 (nightly-report), 12.3 s left, on 5 of 5 nodes
// (...)". client_core reads the nodes' view (status_commands) once the
// acquisition has failed, and these make the words.

#include "operations/probe_op.hpp"
#include "redlock/client.hpp"
#include "redlock/diagnostics.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace redlock::detail {

/// "build-7:4411 (nightly-report), 12.3 s left, on 5 of 5 nodes": the value
/// held on the most nodes (a majority's, if any), its holder text (lock::holder;
/// "a holder with no name" without one), the longest TTL it has left among
/// them, and on how many nodes. With readers and no writer: "3 readers (a, b,
/// c)". Unset when the nodes show nobody (it was released meanwhile).
struct holder_description {
    std::string text;
    bool writer = false;  ///< an exclusive holder, not readers
};
[[nodiscard]] auto describe_holder(const lock_status& seen) -> std::optional<holder_description>;

/// `message` (acquire_checks' failure_summary of a contended single resource)
/// with its "held by another owner" or "held by a writer" made specific.
void name_holder_in(std::string& message, const lock_status& seen);

/// client_core::name_holder's probe: it asks every node about `resource`
/// (status_commands), names the holder in `failed` from the answers, delivers
/// it to `done`, then runs `then`. One more read-only round trip, on the
/// failure path only.
[[nodiscard]] auto naming_probe(op_context& ctx, std::string resource, error failed,
                                client::acquire_callback done, std::function<void()> then)
    -> std::unique_ptr<probe_op>;

/// client_core::explain_loss's probe: reads the tombstone a break leaves
/// (operator_commands.hpp) for `state`'s value, and calls `then` with `why`,
/// its message led by "broken by <breaker>: <reason>" when it was broken.
[[nodiscard]] auto loss_cause_probe(op_context& ctx, const lock_state& state, error why,
                                    std::function<void(error)> then) -> std::unique_ptr<probe_op>;

}  // namespace redlock::detail
