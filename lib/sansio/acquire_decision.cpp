#include "sansio/acquire_decision.hpp"

#include "sansio/timing.hpp"

#include <algorithm>
#include <utility>

namespace redlock::detail {

using std::chrono::milliseconds;

acquire_decision::acquire_decision(acquire_settings settings) : settings_{std::move(settings)} {}

auto acquire_decision::start(const acquire_input& in) -> acquire_actions {
    acquire_actions a;
    if (phase_ != phase::idle) return a;
    if (settings_.max_wait) deadline_ = deadline_after(in.now, *settings_.max_wait);
    begin_attempt(in, a);
    return a;
}

void acquire_decision::begin_attempt(const acquire_input& in, acquire_actions& a) {
    ++attempt_;
    const std::size_t n = settings_.nodes;
    tally_ = quorum_tally{n};
    if (settings_.permits > 0) {
        permit_tally_ = permit_tally{n, settings_.permits};
        granted_permit_.assign(n, permit_tally::none);
    }
    max_counter_ = 0;
    if (settings_.waiting) holder_ttl_.assign(n, -2);
    reports_.reset(n);
    answered_ = 0;
    losing_ = false;
    settle_.reset();
    offering_ = settings_.offers;
    if (offering_) handed_.reset(n);
    phase_ = phase::granting;
    attempt_start_ = in.now;
    // Noted before the grant is sent (the shell queues it on return). A
    // subscription confirmed by now was made on its node before our grant
    // reached that node, so it is there when the grant queues us.
    subscribed_at_start_ = in.subscribed;
    subscriptions_at_start_ = in.subscriptions;
    a.send_grants = true;
}

// ---- round 1: grant ------------------------------------------------------------------------

auto acquire_decision::on_grant(std::size_t node, grant_answer answer, const acquire_input& in)
    -> acquire_actions {
    acquire_actions a;
    if (phase_ != phase::granting || node >= settings_.nodes) return a;  // late: decided already
    if (settings_.waiting) {
        holder_ttl_[node] = answer.holder_ttl;
        if (answer.queued) queued_ = true;
    }
    // Counters count whether or not this node granted: reading one is safe,
    // and a higher reading only raises the token.
    max_counter_ = std::max(max_counter_, answer.counter);
    permits_conflict_ = permits_conflict_ || answer.permits_conflict;
    // Queued there, and its hand-off heard already: that node granted us.
    if (offering_ && answer.queued && answer.outcome.status == node_status::refused &&
        handed_.on_queued(node))
        answer.outcome = {node_status::ok, {}};
    const node_status status = answer.outcome.status;
    reports_.set(node, std::move(answer.outcome));
    ++answered_;
    quorum_tally::verdict verdict = tally_.outcome(status);
    if (settings_.permits > 0) {
        // A yes counts only towards the permit it granted, a late one too: the
        // yeses of a lost attempt must not add up across permits.
        const int permit = status == node_status::ok ? answer.permit : permit_tally::none;
        granted_permit_[node] = permit;
        permit_tally_.answer(permit);
        verdict = permit_tally_.won()    ? quorum_tally::verdict::won
                  : permit_tally_.lost() ? quorum_tally::verdict::lost
                                         : quorum_tally::verdict::pending;
    }
    if (losing_) {
        // Lost already, unless hand-offs won it since; the last answer ends the wait.
        if (verdict == quorum_tally::verdict::won || answered_ == settings_.nodes) {
            losing_ = false;
            a.cancel_retry_timer = true;  // the loss_grace timer
            if (verdict == quorum_tally::verdict::won) {
                decide_grant(verdict, in, a);
            } else {
                fail_attempt(losing_reason_, std::nullopt, &in, a);
            }
        }
        return a;
    }
    decide_grant(verdict, in, a);
    return a;
}

void acquire_decision::decide_grant(quorum_tally::verdict verdict, const acquire_input& in,
                                    acquire_actions& a) {
    if (verdict == quorum_tally::verdict::pending) return;
    if (verdict == quorum_tally::verdict::lost) {
        if (settings_.waiting && !cancelled_ && answered_ < settings_.nodes) {
            // A waiter sleeps after a loss anyway: hear the other nodes out for as long
            // again as the majority took (they were asked at the same moment), and release
            // only where one did grant — not, as a precaution, everywhere still silent: two
            // requests per contended attempt. Silent past the grace, released as before.
            losing_ = true;
            losing_reason_ = failed_majority(tally_);
            const auto took = std::chrono::ceil<milliseconds>(in.now - attempt_start_);
            a.loss_grace = std::clamp(took, milliseconds{1}, settings_.request_timeout);
            return;
        }
        fail_attempt(failed_majority(tally_), std::nullopt, &in, a);
        return;
    }
    const settle_hold::step hold = settle_.on_won(
        in.settling, reports_, std::chrono::ceil<milliseconds>(in.now - attempt_start_),
        std::min(settings_.settle_limit, settings_.ttl / 2));
    a.settle_grace = hold.grace;
    a.cancel_retry_timer = a.cancel_retry_timer || hold.cancel_timer;
    if (hold.wait) return;
    if (!settings_.fencing) {
        conclude(in, a);
        return;
    }
    // Round 2: every counter seen so far only raises the token, and every node
    // is raised to it, so a later holder's round 1 reads at least this value.
    token_ = max_counter_ + 1;
    phase_ = phase::confirming;
    confirm_tally_ = quorum_tally{settings_.nodes};
    a.send_confirms = true;
}

// ---- round 2: fencing confirm --------------------------------------------------------------

auto acquire_decision::on_confirm(std::size_t node, node_outcome outcome, const acquire_input& in)
    -> acquire_actions {
    acquire_actions a;
    if (phase_ != phase::confirming || node >= settings_.nodes) return a;
    const node_status status = outcome.status;
    reports_.set(node, std::move(outcome));
    decide_confirm(confirm_tally_.outcome(status), in, a);
    return a;
}

void acquire_decision::decide_confirm(quorum_tally::verdict verdict, const acquire_input& in,
                                      acquire_actions& a) {
    if (verdict == quorum_tally::verdict::pending) return;
    if (verdict == quorum_tally::verdict::lost) {
        fail_attempt(failed_majority(confirm_tally_), std::nullopt, &in, a);
        return;
    }
    conclude(in, a);
}

// ---- outcome --------------------------------------------------------------------------------

void acquire_decision::conclude(const acquire_input& in, acquire_actions& a) {
    const auto now = in.now;
    // Counted from the first request of the attempt, round 2 included.
    const milliseconds v = validity(settings_.ttl, now - attempt_start_, settings_.drift_factor,
                                    settings_.drift_floor);
    if (v < settings_.min_validity) {
        fail_attempt(errc::validity_expired, v, &in, a);
        return;
    }
    if (settings_.permits > 0) {
        // A permit is held only where one value holds it on a majority: it comes
        // from the permit tally (yeses for different permits never add up), and
        // an attempt without one won there is lost, never granted a permit >= K.
        const std::optional<int> won = permit_tally_.won();
        if (!won || *won < 0 || *won >= settings_.permits) {
            fail_attempt(errc::contended, std::nullopt, &in, a);
            return;
        }
        won_permit_ = *won;
    }
    phase_ = phase::done;
    if (settings_.permits > 0) {
        for (std::size_t i = 0; i < reports_.size(); ++i)
            a.send_stray_releases = a.send_stray_releases || stray_form_of(i) != release_form::none;
    }
    a.end = acquire_actions::ending::granted;
    a.validity = v;
    a.decided_at = now;
}

auto acquire_decision::failed_majority(const quorum_tally& tally) const noexcept -> errc {
    // Without the failed nodes a majority was out of reach whatever the others
    // said: the deployment, not a competitor, is the problem.
    return tally.failed_count() > settings_.nodes - tally.needed() ? errc::quorum_unreachable
                                                                   : errc::contended;
}

auto acquire_decision::release_form_of(std::size_t node) const noexcept -> release_form {
    // Every node whose outcome is granted or unknown, failed or timed out included: their
    // grant may have landed, and the release queued behind it on the same connection undoes
    // it. A definite "held by another owner" needs no release. Where the outcome is unknown,
    // the release may run long after we stopped waiting for it, so it goes as EVAL: a
    // NOSCRIPT there would go unseen.
    if (node >= reports_.size()) return release_form::none;
    // Handed to us by our offer: the attempt that follows takes the key over,
    // and leaving the queue (give_up's dequeue) releases it.
    if (offering_ && handed_.counted(node)) return release_form::none;
    switch (reports_.status(node)) {
        case node_status::refused:
            return release_form::none;
        case node_status::timeout:
        case node_status::cancelled:
        case node_status::unreachable:
            return release_form::by_eval;
        default:
            return release_form::by_sha;
    }
}

auto acquire_decision::stray_form_of(std::size_t node) const noexcept -> release_form {
    // Where the node granted the permit won there is nothing stray; where it
    // granted another, or may have (no answer yet, or an unknown outcome), the
    // value may hold a second permit there.
    if (won_permit_ < 0 || node >= granted_permit_.size()) return release_form::none;
    if (reports_.status(node) == node_status::ok && granted_permit_[node] == won_permit_)
        return release_form::none;
    return release_form_of(node);  // not answered yet: cancelled, so by EVAL
}

void acquire_decision::fail_attempt(errc reason, std::optional<milliseconds> validity,
                                    const acquire_input* in, acquire_actions& a) {
    std::size_t releases = 0;
    for (std::size_t i = 0; i < reports_.size(); ++i) {
        if (release_form_of(i) != release_form::none) ++releases;
    }
    cleanups_ += releases;
    a.send_releases = releases > 0;
    // Semaphores: users that disagree on the permit count are a bug to report,
    // not a contention to wait out.
    if (permits_conflict_ && !cancelled_) reason = errc::invalid_argument;
    const bool budget_left =
        !permits_conflict_ &&
        (settings_.max_attempts == 0 || static_cast<long long>(attempt_) < settings_.max_attempts);
    std::optional<milliseconds> next;
    if (budget_left && !cancelled_ && in != nullptr) {
        next =
            next_attempt({.budget_left = true,
                          .delay = woken_ ? milliseconds{0} : delay_after(reason, *in),
                          .woken = woken_,
                          .deadline = deadline_,
                          // Waiting, a release can come any moment; polling, a retry sooner
                          // than retry.delay would not be what was asked for.
                          .shortest = settings_.waiting ? milliseconds{1} : settings_.retry.delay},
                         in->now);
    }
    woken_ = false;
    if (next) {
        phase_ = phase::sleeping;
        a.retry_after = next;
        return;
    }
    give_up(reason, validity, a);
}

auto acquire_decision::delay_after(errc reason, const acquire_input& in) const -> milliseconds {
    if (!settings_.waiting) return retry_delay(settings_.retry, in.random);
    const wait_situation s{.reason = reason,
                           .nodes = &reports_,
                           .holder_ttl = holder_ttl_,
                           .subscribed = heard_throughout(in),
                           .mode = settings_.mode,
                           .granted_alike = settings_.permits > 0
                                                ? std::optional{permit_tally_.best()}
                                                : std::nullopt};
    return wait_delay(s, settings_.waiter_ttl, settings_.request_timeout, settings_.retry,
                      in.random);
}

auto acquire_decision::heard_throughout(const acquire_input& in) const noexcept -> bool {
    // A waiter sleeps on the notification only if no release can have gone unheard: every
    // subscription was confirmed when this attempt began (so it ran on its node before our
    // grant queued us there), and none was lost and made again since (the same count now).
    // Otherwise wait_delay looks again soon, as a poll would (open_wake_connections).
    return subscribed_at_start_ && in.subscribed && in.subscriptions == subscriptions_at_start_;
}

void acquire_decision::give_up(errc reason, std::optional<milliseconds> validity,
                               acquire_actions& a) {
    failure_ = cancelled_.value_or(reason);
    failure_validity_ = validity;
    phase_ = phase::ending;
    // The grant itself left the queue on the nodes that granted; a node that
    // refused queued us, and no node did unless one refused.
    if (settings_.waiting && queued_) {
        a.send_dequeues = true;
        cleanups_ += settings_.nodes;
    }
    // The caller learns of the failure once the releases have been answered,
    // so that no key of this attempt is left behind when it does.
    end_if_clean(a);
}

void acquire_decision::end_if_clean(acquire_actions& a) {
    if (phase_ != phase::ending || cleanups_ > 0) return;
    phase_ = phase::done;
    a.end = acquire_actions::ending::failed;
}

void acquire_decision::on_straggler(std::size_t node, node_outcome outcome) {
    if (phase_ == phase::ending && node < reports_.size()) reports_.set(node, std::move(outcome));
}

auto acquire_decision::on_cleanup_answered() -> acquire_actions {
    acquire_actions a;
    if (cleanups_ > 0) --cleanups_;
    end_if_clean(a);
    return a;
}

// ---- between attempts -----------------------------------------------------------------------

auto acquire_decision::on_retry_timer(const acquire_input& in) -> acquire_actions {
    acquire_actions a;
    if (phase_ == phase::sleeping && !cancelled_) begin_attempt(in, a);
    return a;
}

auto acquire_decision::on_wake(const acquire_input& in) -> acquire_actions {
    acquire_actions a;
    // Every node that runs the release tells us. The first notice can arrive before the
    // release has run on a majority, so a later notice of the same release is not ignored:
    // it retries what may have been too early. While an attempt is in flight, notices only
    // ask for one retry after it.
    if (cancelled_) return a;
    if (phase_ == phase::sleeping) {
        a.cancel_retry_timer = true;
        begin_attempt(in, a);  // our turn (or the holder let go): try at once
    } else if (phase_ == phase::granting || phase_ == phase::confirming) {
        woken_ = true;  // mid-attempt: retry at once if this one fails
    }
    return a;
}

auto acquire_decision::begin_handoff(const acquire_input& in) -> acquire_actions {
    acquire_actions a;
    if (!can_take_handoff()) return a;
    a.cancel_retry_timer = true;
    begin_attempt(in, a);
    a.send_grants = false;  // the releasing holder's script is this attempt's grant
    offering_ = false;      // and it writes no offer: the nodes keep the last one
    return a;
}

auto acquire_decision::on_handed(std::size_t node, std::uint32_t attempt, const acquire_input& in)
    -> acquire_actions {
    acquire_actions a;
    if (cancelled_ || node >= settings_.nodes) return a;
    if (attempt != attempt_ || !offering_) return on_wake(in);
    const bool granting = phase_ == phase::granting;
    if ((!granting && phase_ != phase::sleeping) || !handed_.on_heard(node)) return a;
    reports_.set(node, {node_status::ok, {}});
    if (granting) {
        const quorum_tally::verdict verdict = tally_.refused_to_yes();
        if (verdict != quorum_tally::verdict::won) return a;
        if (losing_) a.cancel_retry_timer = true;  // the loss_grace timer
        losing_ = false;
        decide_grant(verdict, in, a);
    } else if (handed_.count() >= tally_.needed()) {
        // The attempt was lost and released where granted; the hand-offs alone win.
        a.cancel_retry_timer = true;
        conclude(in, a);
    }
    return a;
}

auto acquire_decision::on_loss_grace(const acquire_input& in) -> acquire_actions {
    acquire_actions a;
    if (!losing_ || phase_ != phase::granting) return a;
    losing_ = false;
    fail_attempt(losing_reason_, std::nullopt, &in, a);
    return a;
}

auto acquire_decision::on_cancel(errc why) -> acquire_actions {
    acquire_actions a;
    if (cancelled_ || phase_ == phase::ending || phase_ == phase::done) return a;
    cancelled_ = why;
    if (const bool settling = settle_.end(false); losing_ || settling) {
        losing_ = false;
        a.cancel_retry_timer = true;  // the loss_grace or settle_grace timer
    }
    if (phase_ == phase::sleeping) {
        a.cancel_retry_timer = true;
        give_up(why, std::nullopt, a);  // between attempts: the last one was released already
    } else if (phase_ == phase::granting || phase_ == phase::confirming) {
        fail_attempt(why, std::nullopt, nullptr, a);
    } else {
        give_up(why, std::nullopt, a);  // not started
    }
    return a;
}

}  // namespace redlock::detail
