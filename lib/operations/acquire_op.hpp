#pragma once

#include "sansio/acquire_decision.hpp"
#include "sansio/node_outcomes.hpp"
#include "operations/operation.hpp"
#include "sansio/quorum_tally.hpp"
#include "transport/timer_queue.hpp"
#include "operations/waiter_registry.hpp"
#include "redlock/client.hpp"

#include <array>
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
/// building and sending the commands, the retry timer, the waiter's
/// registration, and the result handed to the caller.
///
/// A plain lock is `SET key value NX PX ttl`. A lock over several resources,
/// or one with a fencing token, runs the acquire script instead (all keys or
/// none, and the node's fence counter read either way). A waiting acquisition
/// runs the wait-acquire script, which also queues it on the node.
class acquire_op final : public operation,
                         public waker,
                         public handoff_target,
                         private decision_env {
public:
    acquire_op(op_context& ctx, std::vector<std::string> resources, lock_options options,
               client::acquire_callback done, client::acquire_ticket ticket);
    acquire_op(const acquire_op&) = delete;
    auto operator=(const acquire_op&) -> acquire_op& = delete;
    ~acquire_op() override;

    void start() override;
    void cancel(errc why) override;
    /// A release notification for this waiter: try again now.
    void wake() override;
    /// Counted against max_concurrent_acquisitions: tells the core when done.
    void count_against_limit() noexcept { limited_ = true; }
    [[nodiscard]] auto ticket() const noexcept -> client::acquire_ticket override {
        return ticket_;
    }
    // handoff_target (acquire_op_handoff.cpp): a release by this client grants us.
    auto begin_handoff() -> std::optional<handoff_offer> override;
    void on_handoff_reply(std::uint32_t attempt, std::size_t node,
                          const reply_event& event) override;

private:
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

    // decision_env: the decision's clock, random numbers and subscription state.
    auto now() -> std::chrono::steady_clock::time_point override;
    auto random() -> std::uint64_t override;
    auto subscribed() -> bool override;

    void handle(std::uint32_t tag, const reply_event& event) override;
    /// Waiting for one exclusive resource without a fencing token: a release
    /// of it by this client may hand it to us.
    [[nodiscard]] auto can_be_successor() const noexcept -> bool;
    [[nodiscard]] auto handoff_answer_of(std::size_t node, const reply_event& event) const
        -> grant_answer;
    [[nodiscard]] auto check_arguments(const lock_options& options) const -> std::string;
    void perform(const acquire_actions& a);
    [[nodiscard]] auto grant_kind(bool eval) const noexcept -> kind;
    [[nodiscard]] auto grant_command(bool eval) const -> encoded_command;
    void send_grants();
    void send_grant(std::size_t node, bool eval);
    [[nodiscard]] auto permit_grant_command(bool eval, std::string_view ttl_text) const
        -> encoded_command;
    void send_stray_release(std::size_t node, bool eval);
    [[nodiscard]] auto fence_key() const -> std::string;
    [[nodiscard]] auto confirm_command(bool eval) const -> encoded_command;
    void send_confirm(std::size_t node, bool eval);
    [[nodiscard]] auto outcome_of(const reply_event& event, bool confirm) const -> node_outcome;
    [[nodiscard]] auto grant_answer_of(std::size_t node, const reply_event& event) const
        -> grant_answer;
    void discount_if_quarantined(std::size_t node, node_outcome& outcome) const;
    void send_releases();
    void send_release(std::size_t node, bool eval);
    void send_dequeues();
    void finish_success(std::chrono::milliseconds validity,
                        std::chrono::steady_clock::time_point decided_at);
    void finish_failure();
    /// Records this acquisition's latency (and its wait, if it waited), up to
    /// `end` (a grant passes the time it was decided: one clock read fewer).
    void record_latency(acquire_outcome outcome, std::chrono::steady_clock::time_point end =
                                                     std::chrono::steady_clock::now()) noexcept;
    [[nodiscard]] auto describe_failure(errc reason) const -> std::string;
    /// Several resources: records which one a node's refusal says is held.
    void note_held_resource(const reply_event& event);
    /// ": 'b' is held by another owner", naming what the refusals named.
    [[nodiscard]] auto held_phrase() const -> std::string;

    // Used by waiting acquisitions only.
    struct wait_fields {
        std::string waiter_id;
        std::string liveness_text;
        std::string arrival_text;  // queue score: the same on every node
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
    // This attempt's grant request on each node (the usual 3, 5 or 7 nodes):
    // what a decided acquisition disowns rather than wait for.
    std::array<std::uint32_t, 8> grant_numbers_{};
    int first_permit_ = 0;  // semaphores: where this attempt's scan starts
    // Several resources: bit i set when a node said resource i is held (the
    // first 64 only), so that the error names what is held.
    std::uint64_t held_resources_ = 0;
    bool scripted_ = false;    // several resources, fencing, a reader or a permit
    bool read_fence_ = false;  // a reader with fencing: reads the counter
    bool limited_ = false;     // counted against max_concurrent_acquisitions
};

}  // namespace redlock::detail
