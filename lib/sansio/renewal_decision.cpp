#include "sansio/renewal_decision.hpp"

#include "sansio/delay_policy.hpp"

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

auto lost_release_delay(steady_clock::time_point valid_until, steady_clock::time_point now) noexcept
    -> milliseconds {
    if (now >= valid_until) return milliseconds{0};
    return std::chrono::ceil<milliseconds>(valid_until - now);
}

auto renewal_decision::until(const renewal_lock_view& lock, steady_clock::time_point now) noexcept
    -> milliseconds {
    // Rounded up: the deadline timer must not fire before the validity ends.
    return std::chrono::ceil<milliseconds>(lock.valid_until - now);
}

auto renewal_decision::start(const renewal_lock_view& lock, steady_clock::time_point now) const
    -> renewal_actions {
    renewal_actions a;
    a.renew_in = renew_interval(settings_.ttl, settings_.renew_fraction);
    a.deadline_in = until(lock, now);
    return a;
}

auto renewal_decision::on_renew_timer() -> renewal_actions {
    renewal_actions a;
    if (renewing_) return a;  // one renewal at a time
    renewing_ = true;
    a.send_extend = true;
    return a;
}

auto renewal_decision::on_extended(const result<milliseconds>& outcome,
                                   const renewal_lock_view& lock, steady_clock::time_point now)
    -> renewal_actions {
    renewing_ = false;
    renewal_actions a;
    if (outcome) {
        a.renewed = true;
        last_nodes_.clear();  // a later loss must not report an older failure
        a.deadline_in = until(lock, now);
        a.renew_in = renew_interval(settings_.ttl, settings_.renew_fraction);
        return a;
    }
    const error& why = outcome.error();
    // Kept for a loss at the deadline. An extend refused before it was sent
    // (invalid_argument) has no per-node answers: the older ones stay.
    if (!why.nodes.empty()) last_nodes_ = why.nodes;
    if (why.code == errc::not_held || why.code == errc::invalid_argument)
        return lost(lock, {loss_cause::refused, why.message, why.nodes, false});
    // Nodes slow or down: try again soon, while the validity lasts. The
    // deadline timer reports the loss if no attempt gets through in time.
    a.renew_in = renew_retry_gap(settings_.request_timeout);
    return a;
}

auto renewal_decision::on_deadline_timer(const renewal_lock_view& lock,
                                         steady_clock::time_point now) const -> renewal_actions {
    if (now < lock.valid_until) {
        // Early (the timers' clock is cached in whole milliseconds and lags
        // the steady clock), or the deadline moved (a manual extend): wait
        // for the deadline as it stands now.
        renewal_actions a;
        a.deadline_in = until(lock, now);
        return a;
    }
    return lost(
        lock, {loss_cause::validity_ended,
               "no renewal reached a majority before its validity ended", last_nodes_, renewing_});
}

auto renewal_decision::lost(const renewal_lock_view& lock, renewal_loss loss) const
    -> renewal_actions {
    renewal_actions a;
    // A release on another thread sets `released` before its task reaches the
    // loop to forget this lock; a renewal refused meanwhile is not a loss.
    if (lock.released) {
        a.end = renewal_actions::ending::forget;
        return a;
    }
    a.end = renewal_actions::ending::lost;
    a.loss = std::move(loss);
    return a;
}

}  // namespace redlock::detail
