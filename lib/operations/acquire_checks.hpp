#pragma once

// What an acquisition makes of its arguments before it starts — the decision's
// settings, the lock it will hand out, and what is wrong with the call — and
// how its failure is described once it ends. Free functions: acquire_op calls
// them, and keeps none of their state.

#include "operations/node_port.hpp"
#include "redlock/client.hpp"
#include "redlock/config.hpp"
#include "sansio/acquire_decision.hpp"
#include "sansio/member_misconfig.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

struct lock_state;
class op_context;

/// A yes from a node in quarantine (node_port::quarantined_until) is not
/// counted: `outcome` becomes an error that says why, and for how long.
void discount_quarantined(const node_port& node, std::uint16_t slot, node_outcome& outcome,
                          std::chrono::steady_clock::time_point now);

/// A lock was granted: each node whose grant failed (an error, a timeout, not reachable; not
/// one merely slower than the majority) is told it missed one (quorum_member::missed_grant).
void note_missed_grants(const op_context& ctx, const node_outcomes& nodes);

/// The decision's settings, from the client's defaults and this call's options.
[[nodiscard]] auto settings_of(const client_config& config, std::size_t resources,
                               const lock_options& options) -> acquire_settings;

/// The lock this acquisition hands out if granted, all but its value and
/// validity. Takes the options' on_lost callback; `proclamation`: a campaign's
/// (lock_state::proclamation), or null.
[[nodiscard]] auto lock_state_of(const client_config& config, std::vector<std::string> resources,
                                 lock_options& options, const acquire_settings& settings,
                                 std::shared_ptr<const std::string> proclamation = {})
    -> std::shared_ptr<lock_state>;

/// A reader that reads the fence counter (only a writer raises it).
[[nodiscard]] auto reads_fence(const client_config& config, const lock_options& options) -> bool;

/// What is wrong with `resource` as the name of a lock, or empty: an empty
/// name, or one whose keys could not share a hash tag (sansio/hash_slot.hpp,
/// taggable). Acquire, status, and the extend and release of an adopted lock
/// all refuse such a name.
[[nodiscard]] auto resource_problem(std::string_view resource) -> std::string;

/// Why `options.session` cannot hold `lock`, or empty.
[[nodiscard]] auto session_problem(const client_config& config, const lock_state& lock,
                                   const lock_options& options) -> std::string;

/// What is wrong with this call's arguments, or empty.
[[nodiscard]] auto argument_problem(const client_config& config, const acquire_settings& settings,
                                    const lock_state& lock, const lock_options& options)
    -> std::string;

/// Which resources the nodes' refusals named as held: bit i for resource i
/// (the first 64 only), so that the error names what is held.
struct held_resources {
    std::uint64_t bits = 0;
    void note(std::size_t index) noexcept {
        if (index < 64) bits |= std::uint64_t{1} << index;
    }
};

/// The start of a failure's message: "resource 'a' is held by another owner
/// (2 attempts; last attempt: 1 of 3 nodes granted, 2 needed" — the caller
/// appends each node's problem and the closing parenthesis.
[[nodiscard]] auto failure_summary(const lock_state& lock, const acquire_decision& decision,
                                   held_resources held, errc reason) -> std::string;

/// The whole error of a failed acquisition: failure_summary, each node's
/// problem (named by `name_of(i)`), the validity left, and the nodes' reports;
/// invalid_config rather than quorum_unreachable when a member is set up so that it
/// can never serve (sansio/member_misconfig.hpp).
template <class NameOf>
[[nodiscard]] auto failure_error(const lock_state& lock, const acquire_decision& decision,
                                 held_resources held, errc reason, const NameOf& name_of) -> error {
    std::string message = failure_summary(lock, decision, held, reason);
    decision.nodes().append_problems(message, name_of);
    message += ")";
    if (const auto v = decision.failure_validity())
        message += " (validity left: " + std::to_string(v->count()) + " ms)";
    // A member that can never serve as configured makes it a configuration error.
    return configuration_failure(error{make_error_code(reason), std::move(message),
                                       decision.nodes().to_reports(name_of),
                                       static_cast<int>(decision.attempt())});
}

/// How a failure counts in the acquire latency histograms.
[[nodiscard]] constexpr auto outcome_of(errc reason) noexcept -> acquire_outcome {
    return reason == errc::contended            ? acquire_outcome::contended
           : reason == errc::quorum_unreachable ? acquire_outcome::unreachable
                                                : acquire_outcome::other;
}

/// A failure that names who holds the resource (client_core::name_holder): a
/// contended single resource, other than a semaphore's permit.
[[nodiscard]] auto names_holder(const lock_state& lock, errc reason) noexcept -> bool;

}  // namespace redlock::detail
