#pragma once

// The decisions of one acquisition, with no I/O: replies, timer expiries,
// wake-ups and cancellation come in as events; what to send, schedule and
// report goes out as actions. Time and randomness come in with the events (an
// acquire_input the shell reads once per event), so
// tests/unit/acquire_decision_test.cpp plays every reply order on 1, 3, 5 and 7
// nodes without a socket or a clock. acquire_op is the shell that performs the
// actions.

#include "redlock/config.hpp"
#include "redlock/error.hpp"
#include "sansio/acquire_settling.hpp"
#include "sansio/delay_policy.hpp"
#include "sansio/handoff_grants.hpp"
#include "sansio/node_outcomes.hpp"
#include "sansio/permit_tally.hpp"
#include "sansio/quorum_tally.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace redlock::detail {

/// What the shell read for one event, since a decision reads no clock and
/// draws no number: the steady clock's time, a random value (the jitter of a
/// retry this event may schedule), and whether a release can wake us.
struct acquire_input {
    std::chrono::steady_clock::time_point now;
    std::uint64_t random = 0;
    /// Every node's subscriber connection is confirmed (waiting acquisitions).
    bool subscribed = false;
    /// How many SUBSCRIBEs the client's subscriber connections have had
    /// confirmed so far, all nodes and reconnections counted: the same number
    /// at two events, `subscribed` at both, means no subscription was lost and
    /// made again in between.
    std::uint64_t subscriptions = 0;
    /// None: no node is settling (a warm client).
    const settling_nodes* settling = nullptr;
};

/// What an acquisition was asked for, fixed from its start.
struct acquire_settings {
    std::size_t nodes = 1;
    bool fencing = false;  ///< round 2 raises and confirms the fence counter
    bool waiting = false;  ///< queued per node and woken by release notifications
    wait_mode mode = wait_mode::targeted;
    /// Waiting: each attempt leaves an offer where it is queued, and a release
    /// of any client may grant it (on_handed). Exclusive, unfenced, woken one by one.
    bool offers = false;
    /// A semaphore's permit count: a node grants one of them, and the attempt
    /// wins the permit a majority granted (permit_tally). 0: one lock key.
    int permits = 0;
    int max_attempts = 1;  ///< 0: unlimited (a wait deadline bounds it)
    /// How long to wait at most, from start() (saturating: max() is "for as
    /// long as it takes"). None: the attempt budget alone bounds it.
    std::optional<std::chrono::milliseconds> max_wait;
    std::chrono::milliseconds ttl{0};
    std::chrono::milliseconds min_validity{1};
    double drift_factor = 0.01;
    std::chrono::milliseconds drift_floor{2};
    client_config::retry_policy retry;
    std::chrono::milliseconds waiter_ttl{2000};
    std::chrono::milliseconds request_timeout{50};
    /// A majority's grant waits at most this long from the attempt's start (and at most
    /// half the TTL) for nodes still settling (settling_nodes) to answer too, so that a
    /// fresh client's first lock is on every node it can reach, not on a bare majority
    /// that one failover undoes. 0: never waits.
    std::chrono::milliseconds settle_limit{0};
};

/// One node's answer to the grant (round 1).
struct grant_answer {
    node_outcome outcome;       ///< ok: granted; refused: held by another owner
    std::uint64_t counter = 0;  ///< the node's fence counter (scripted grants), 0 if none
    long long holder_ttl = -2;  ///< waiting: the holder's TTL there in ms (-2: no key)
    bool queued = false;        ///< waiting: the refusal queued us on that node
    int permit = -1;            ///< semaphores: the permit this node granted (outcome ok)
    /// Semaphores: the node knows this resource with another permit count. The
    /// acquisition gives up (invalid_argument) unless a majority granted anyway.
    bool permits_conflict = false;
};

/// What the shell does after an event, in this order.
struct acquire_actions {
    /// Cancel the pending retry timer (a wake-up or cancellation came first).
    bool cancel_retry_timer = false;
    /// A new attempt: the grant, with a fresh value, to every node.
    bool send_grants = false;
    /// Round 2: confirm token() on every node.
    bool send_confirms = false;
    /// Undo the attempt: a release to every node release_form() names.
    bool send_releases = false;
    /// Leave the queue on every node.
    bool send_dequeues = false;
    /// Semaphores, once granted: release the other permits this attempt's
    /// value holds, on every node stray_form() names (their grant, answered or
    /// not, is ahead of the release on the same connection).
    bool send_stray_releases = false;
    /// Start the next attempt after this long.
    std::optional<std::chrono::milliseconds> retry_after;
    /// Waiting, an attempt lost before every node answered: call on_loss_grace()
    /// after this long (on the retry timer) unless the last answer comes first.
    std::optional<std::chrono::milliseconds> loss_grace;
    /// Won, with nodes still settling: call on_settle_grace() after this long (on the
    /// retry timer) unless their answers come first.
    std::optional<std::chrono::milliseconds> settle_grace;
    enum class ending : std::uint8_t { none, granted, failed };
    /// granted: hand out the lock, valid for `validity` from `decided_at`.
    /// failed: report failure_reason() (every release has been answered).
    ending end = ending::none;
    std::chrono::milliseconds validity{0};
    std::chrono::steady_clock::time_point decided_at;
};

class acquire_decision {
public:
    enum class phase : std::uint8_t {
        idle,        ///< not started
        granting,    ///< round 1 in flight
        confirming,  ///< round 2 (fencing) in flight
        sleeping,    ///< between attempts: the retry timer runs
        ending,      ///< given up: waiting for the releases to be answered
        done,        ///< the result is out
    };
    /// How an attempt's release reaches a node.
    enum class release_form : std::uint8_t { none, by_sha, by_eval };

    explicit acquire_decision(acquire_settings settings);

    /// The first attempt; the wait deadline counts from `in.now`.
    [[nodiscard]] auto start(const acquire_input& in) -> acquire_actions;
    /// Node `node` answered this attempt's grant (or it timed out or failed).
    [[nodiscard]] auto on_grant(std::size_t node, grant_answer answer, const acquire_input& in)
        -> acquire_actions;
    /// Node `node` answered this attempt's fencing confirm.
    [[nodiscard]] auto on_confirm(std::size_t node, node_outcome outcome, const acquire_input& in)
        -> acquire_actions;
    /// A straggler of the failed last attempt answered before its release (same
    /// connection, in order): recorded, so that the failure report is complete.
    void on_straggler(std::size_t node, node_outcome outcome);
    /// A release or dequeue sent by this decision has been answered.
    [[nodiscard]] auto on_cleanup_answered() -> acquire_actions;
    /// The retry timer fired.
    [[nodiscard]] auto on_retry_timer(const acquire_input& in) -> acquire_actions;
    /// A release notification for this waiter.
    [[nodiscard]] auto on_wake(const acquire_input& in) -> acquire_actions;
    /// A release of the same lock by this client is about to hand it to us
    /// (its script sets our value where we are first in line): an attempt
    /// starts now whose grant is that script, so nothing is sent. Its answers
    /// come in through on_grant(), and the attempt is decided like any other —
    /// validity counted from now, a majority or a clean-up. Only between
    /// attempts (can_take_handoff()); otherwise no action.
    [[nodiscard]] auto begin_handoff(const acquire_input& in) -> acquire_actions;
    [[nodiscard]] auto can_take_handoff() const noexcept -> bool {
        return phase_ == phase::sleeping && !cancelled_ && !settings_.fencing &&
               settings_.permits == 0;
    }
    /// A release (of any client) set `node`'s key to the value that `attempt`
    /// offered there, and said so by pub/sub. It counts as that node's grant of
    /// the current attempt once the node's answer queued us (handoff_grants):
    /// while round 1 is in flight, beside the other answers; after a lost attempt,
    /// the hand-offs alone, a majority of them winning (validity from the
    /// attempt's start, which the node's offer postdates). An earlier attempt's
    /// offer is only a wake-up: the next attempt's grant takes that key over.
    [[nodiscard]] auto on_handed(std::size_t node, std::uint32_t attempt, const acquire_input& in)
        -> acquire_actions;
    /// Nodes that handed us the current attempt's value.
    [[nodiscard]] auto handed_count() const noexcept -> std::size_t { return handed_.count(); }
    /// The loss_grace timer fired: the nodes still silent are released.
    [[nodiscard]] auto on_loss_grace(const acquire_input& in) -> acquire_actions;
    /// The settle_grace timer fired: decide without the nodes still settling.
    [[nodiscard]] auto on_settle_grace(const acquire_input& in) -> acquire_actions {
        acquire_actions a;
        if (settle_.end(true) && phase_ == phase::granting)
            decide_grant(quorum_tally::verdict::won, in, a);
        return a;
    }
    /// Cancelled by the user or by shutdown (no time needed: nothing is retried).
    [[nodiscard]] auto on_cancel(errc why) -> acquire_actions;

    [[nodiscard]] auto settings() const noexcept -> const acquire_settings& { return settings_; }
    [[nodiscard]] auto current_phase() const noexcept -> phase { return phase_; }
    /// A grant (confirm) reply would still be heard: the shell resends a
    /// NOSCRIPT'd request only then.
    [[nodiscard]] auto open_for_grants() const noexcept -> bool {
        return phase_ == phase::granting;
    }
    [[nodiscard]] auto open_for_confirms() const noexcept -> bool {
        return phase_ == phase::confirming;
    }
    [[nodiscard]] auto attempt() const noexcept -> std::uint32_t { return attempt_; }
    [[nodiscard]] auto token() const noexcept -> std::uint64_t { return token_; }
    /// The highest fence counter the current attempt's grants read (a reader's
    /// token: at least that of every writer that held before it).
    [[nodiscard]] auto highest_counter() const noexcept -> std::uint64_t { return max_counter_; }
    [[nodiscard]] auto cancelled() const noexcept -> bool { return cancelled_.has_value(); }
    /// What each node said in the current attempt (the last round it reached).
    [[nodiscard]] auto nodes() const noexcept -> const node_outcomes& { return reports_; }
    [[nodiscard]] auto release_form_of(std::size_t node) const noexcept -> release_form;
    /// Semaphores, once granted: how a node's other permits are released.
    [[nodiscard]] auto stray_form_of(std::size_t node) const noexcept -> release_form;
    /// Semaphores: the permit won (-1 until granted).
    [[nodiscard]] auto permit() const noexcept -> int { return won_permit_; }
    /// Some node refused and so queued us: leaving needs a dequeue there.
    [[nodiscard]] auto queued() const noexcept -> bool { return queued_; }
    [[nodiscard]] auto cleanups_pending() const noexcept -> std::size_t { return cleanups_; }
    /// Why it failed, once ending or done without a grant.
    [[nodiscard]] auto failure_reason() const noexcept -> errc { return failure_; }
    /// The validity left when granted too late (validity_expired).
    [[nodiscard]] auto failure_validity() const noexcept
        -> std::optional<std::chrono::milliseconds> {
        return failure_validity_;
    }
    /// Forget the per-node reports (a granted lock describes none).
    void drop_reports() noexcept { reports_.release_memory(); }

private:
    void begin_attempt(const acquire_input& in, acquire_actions& a);
    void decide_grant(quorum_tally::verdict verdict, const acquire_input& in, acquire_actions& a);
    void decide_confirm(quorum_tally::verdict verdict, const acquire_input& in, acquire_actions& a);
    void conclude(const acquire_input& in, acquire_actions& a);
    /// `in` is null once cancelled: no next attempt is scheduled, so no time is needed.
    void fail_attempt(errc reason, std::optional<std::chrono::milliseconds> validity,
                      const acquire_input* in, acquire_actions& a);
    void give_up(errc reason, std::optional<std::chrono::milliseconds> validity,
                 acquire_actions& a);
    void end_if_clean(acquire_actions& a);
    [[nodiscard]] auto failed_majority(const quorum_tally& tally) const noexcept -> errc;
    [[nodiscard]] auto delay_after(errc reason, const acquire_input& in) const
        -> std::chrono::milliseconds;
    /// Every release that ran after this attempt queued us reaches us: see begin_attempt.
    [[nodiscard]] auto heard_throughout(const acquire_input& in) const noexcept -> bool;

    acquire_settings settings_;
    std::optional<std::chrono::steady_clock::time_point> deadline_;  // of the wait, from start()
    node_outcomes reports_;
    quorum_tally tally_{0};
    quorum_tally confirm_tally_{0};
    permit_tally permit_tally_;
    std::vector<int> granted_permit_;  // semaphores: what each node granted
    int won_permit_ = -1;
    std::vector<long long> holder_ttl_;  // waiting only
    std::chrono::steady_clock::time_point attempt_start_;
    std::optional<std::chrono::milliseconds> failure_validity_;
    std::optional<errc> cancelled_;
    std::uint64_t max_counter_ = 0;
    std::uint64_t token_ = 0;
    std::size_t cleanups_ = 0;  // releases and dequeues sent and not yet answered
    std::uint32_t attempt_ = 0;
    errc failure_ = errc::contended;
    phase phase_ = phase::idle;
    bool woken_ = false;  // woken while an attempt was in flight
    // Waiting: lost at a majority, the last answers awaited (loss_grace), so
    // that only a node that did grant gets a release: usually none.
    bool losing_ = false;
    errc losing_reason_ = errc::contended;
    settle_hold settle_;             // won, and waiting for nodes still settling (settle_grace)
    std::size_t answered_ = 0;       // this attempt's round-1 answers
    bool queued_ = false;            // some node refused, and so queued us
    bool permits_conflict_ = false;  // a node knows the semaphore with another count
    handoff_grants handed_;          // offers: this attempt's grants by others' releases
    bool offering_ = false;          // this attempt's grant leaves offers
    // Waiting: subscribed on every node when this attempt began, and how many
    // subscriptions had been confirmed then (heard_throughout).
    bool subscribed_at_start_ = false;
    std::uint64_t subscriptions_at_start_ = 0;
};

}  // namespace redlock::detail
