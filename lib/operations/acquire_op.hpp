#pragma once

#include "operations/acquire_checks.hpp"
#include "operations/grant_commands.hpp"
#include "operations/op_context.hpp"
#include "operations/operation.hpp"
#include "operations/request_numbers.hpp"
#include "operations/waiter_registry.hpp"
#include "redlock/client.hpp"
#include "sansio/acquire_decision.hpp"
#include "sansio/node_outcomes.hpp"
#include "transport/timer_queue.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

struct lock_state;

/// One acquisition (the algorithm: README, "How an acquisition works"): the
/// I/O shell around acquire_decision, which decides everything — when the
/// verdict is known, the fencing round, the validity, what to release, when to
/// retry. This class turns replies into its events and performs its actions:
/// sending the commands (made by grant_commands), the retry timer, the
/// waiter's registration, and the result handed to the caller.
///
/// A plain lock is `SET key value NX PX ttl`. A lock over several resources,
/// or one with a fencing token, runs the acquire script instead (all keys or
/// none, and the node's fence counter read either way). A waiting acquisition
/// runs the wait-acquire script, which also queues it on the node.
///
/// A waiting one is also a successor of this client's releases of the same
/// lock: a release's script grants it where it is first in line, and that
/// script is the grant of an attempt begun when the release asks
/// (begin_handoff), decided like any other from the answers the release
/// forwards. Nothing there is a new rule of safety: the script's SET is a grant
/// of our value on one node, as our own SET NX would be.
class acquire_op final : public operation, public waiter, private settling_nodes {
public:
    /// `proclamation`: a campaign's proposal (lock_state::proclamation), or null.
    acquire_op(op_context& ctx, std::vector<std::string> resources, lock_options options,
               client::acquire_callback done, client::acquire_ticket ticket,
               std::shared_ptr<const std::string> proclamation = {});
    acquire_op(const acquire_op&) = delete;
    auto operator=(const acquire_op&) -> acquire_op& = delete;
    ~acquire_op() override;

    void start() override;
    void cancel(errc why) override;
    /// Counted against max_concurrent_acquisitions: tells the core when done.
    void count_against_limit() noexcept { limited_ = true; }
    [[nodiscard]] auto ticket() const noexcept -> client::acquire_ticket override {
        return ticket_;
    }

    // waiter: a release notification, or a release by this client that grants us.
    void wake() override;
    auto begin_handoff() -> std::optional<handoff_offer> override;
    void on_handoff_reply(std::uint32_t attempt, std::size_t node,
                          const reply_event& event) override;
    void on_handed(std::size_t node, std::uint32_t attempt) override;

private:
    /// Whether node `node` is still making its first connection for this lock's slot.
    [[nodiscard]] auto settling(std::size_t node) const -> bool override {
        return ctx_.node(node).settling(slot_);
    }
    /// Arms the retry timer (the only timer) to call the decision's `event` after `delay`.
    void arm(std::chrono::milliseconds delay,
             acquire_actions (acquire_decision::*event)(const acquire_input&));
    enum kind : std::uint32_t {
        set_kind,
        script_sha_kind,
        script_eval_kind,
        confirm_sha_kind,
        confirm_eval_kind,
        release_sha_kind,
        release_eval_kind,
        dequeue_kind,
        stray_sha_kind,  // semaphores: the other permits a won attempt holds
        stray_eval_kind,
    };

    void handle(std::uint32_t tag, const reply_event& event) override;
    /// What an event's decision needs from outside: the steady clock (read here
    /// and nowhere else in this class: once per entry point), a random value
    /// and whether a release can wake us.
    [[nodiscard]] auto read_input() -> acquire_input;
    /// A node that lost its script cache (restart, SCRIPT FLUSH) answered an
    /// EVALSHA with NOSCRIPT: true if the request is sent again as EVAL, which
    /// loads the script there (only while its answer would still be heard).
    auto resend_as_eval(std::uint32_t tag, const reply_event& event) -> bool;
    [[nodiscard]] auto commands() const noexcept -> grant_commands;
    /// Waiting for one exclusive resource without a fencing token: a release
    /// of it by this client may hand it to us.
    [[nodiscard]] auto can_be_successor() const noexcept -> bool;
    /// Performs `a`; `now` is the event's time (the latency of a failure). A loss
    /// grace is a least wait, and the timers count the loop's clock (uv_now) in
    /// whole milliseconds, read at the turn's start: one of d ms can fire almost
    /// at once. It gets 1 ms more, or a node that answered in time is sent a
    /// release it did not need (its answer still unread when the timer fires).
    void perform(const acquire_actions& a, std::chrono::steady_clock::time_point now);
    void send_grants();
    /// A script's grant again, as EVAL, to a node that answered NOSCRIPT.
    void send_grant_by_eval(std::size_t node);
    void send_confirm(std::size_t node, bool eval);
    void send_releases();
    void send_release(std::size_t node, bool eval);
    void send_stray_release(std::size_t node, bool eval);
    void send_dequeues();
    void finish_success(std::chrono::milliseconds validity,
                        std::chrono::steady_clock::time_point decided_at);
    void finish_failure(std::chrono::steady_clock::time_point now);
    /// Records this acquisition's latency (and its wait, if it waited) up to `end`.
    void record_latency(acquire_outcome outcome,
                        std::chrono::steady_clock::time_point end) noexcept;

    // Used by waiting acquisitions only.
    struct wait_fields {
        queue_entry entry;
        std::uint64_t arrival = 0;
        std::shared_ptr<handoff_link> link;  // successors only
        std::uint32_t handoff_attempt = 0;   // the attempt a release granted, if any
    };

    // What only some acquisitions need is behind a pointer: a thousand locks
    // in flight are a thousand of these.
    std::shared_ptr<lock_state> state_;
    client::acquire_callback done_;
    acquire_decision decision_;
    std::unique_ptr<wait_fields> wait_;
    std::unique_ptr<error> argument_error_;  // delivered on a later turn
    client::acquire_ticket ticket_;
    timer_queue::key retry_timer_{};
    std::chrono::steady_clock::time_point started_{};  // for the latency histograms
    // This attempt's grant request on each node: what a decided acquisition
    // disowns rather than wait for.
    request_numbers grant_numbers_;
    int first_permit_ = 0;   // semaphores: where this attempt's scan starts
    held_resources held_{};  // several resources: what the refusals named
    grant_commands::shape shape_{};
    bool limited_ = false;  // counted against max_concurrent_acquisitions
};

}  // namespace redlock::detail
