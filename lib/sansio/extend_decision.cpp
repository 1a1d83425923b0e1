#include "sansio/extend_decision.hpp"

#include "redlock/lock.hpp"
#include "sansio/timing.hpp"

#include <algorithm>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

auto extend_decision::start(const extend_lock_view& lock, steady_clock::time_point now)
    -> extend_actions {
    extend_actions a;
    const auto refuse = [&](errc code, std::string message) {
        open_ = false;
        a.end = extend_actions::ending::refused;
        a.code = code;
        a.message = std::move(message);
        return a;
    };
    if (lock.empty) return refuse(errc::invalid_argument, "extend of an empty lock handle");
    if (settings_.ttl <= milliseconds{0})
        return refuse(errc::invalid_argument, "ttl must be greater than 0 ms");
    if (settings_.ttl > max_ttl)
        return refuse(errc::invalid_argument, "ttl must be at most 2147483647 ms");
    // Extending a lock whose validity has ended would be acquiring it afresh
    // without the checks of an acquisition: refuse.
    const char* gone = nullptr;
    if (lock.released)
        gone = "it was released";
    else if (lock.lost)
        gone = "it was lost";
    else if (!lock.adopted && now >= lock.valid_until)
        gone = "its validity had already ended";
    if (gone != nullptr) {
        return refuse(errc::not_held,
                      "cannot extend '" + std::string{lock.resource} + "': " + gone);
    }
    reports_.reset(missing_.size());
    started_ = now;
    a.send_extends = true;
    return a;
}

namespace {

/// The script's number: an integer, or a permit of unknown index's {ttl, permit}.
auto extend_number(const reply_event& event) noexcept -> std::optional<long long> {
    if (event.status != request_status::reply) return std::nullopt;
    if (is_array(event.answer, 2)) return array_integer(event.answer, 0);
    return integer_of(event.answer);
}

}  // namespace

auto extend_decision::permit_of(const reply_event& event) noexcept -> int {
    if (event.status != request_status::reply || !is_array(event.answer, 2))
        return permit_tally::none;
    const std::optional<long long> ttl = array_integer(event.answer, 0);
    const std::optional<long long> permit = array_integer(event.answer, 1);
    if (!ttl || *ttl < 1 || !permit || *permit < 0 || *permit >= max_permits)
        return permit_tally::none;
    return static_cast<int>(*permit);
}

auto extend_decision::answer_of(const reply_event& event) noexcept -> extend_answer {
    const std::optional<long long> answer = extend_number(event);
    if (answer && *answer >= 1) return extend_answer::extended;  // the TTL left there
    if (answer == 0) return extend_answer::other_value;
    if (answer == -1) return extend_answer::missing;
    return extend_answer::failed;
}

auto extend_decision::on_reply(std::size_t node, script_form sent, const reply_event& event,
                               const extend_lock_view& lock, steady_clock::time_point now)
    -> extend_actions {
    extend_actions a;
    const extend_answer answer = answer_of(event);
    if (!open_) {
        // A straggler that lost the key, after a successful extend: repair it
        // too, while the lock is still ours.
        const bool valid = !lock.released && !lock.lost && now < lock.valid_until;
        if (repairs_late(answer) && valid) a.repair_late = node;
        return a;
    }
    if (after_script_reply(sent, event) == script_reply::resend_as_eval) {
        a.resend_as_eval = node;  // restarted or flushed node: EVAL loads the script again
        return a;
    }
    record(node, answer, event);
    conclude(on_answer(node, answer, permit_of(event)), lock, now, a);
    return a;
}

void extend_decision::record(std::size_t node, extend_answer answer, const reply_event& event) {
    if (node >= reports_.size()) return;
    switch (answer) {
        case extend_answer::extended:
            reports_.set(node, {node_status::ok, {}});
            // The scripts never shorten a TTL: a node may report more than ttl.
            // (With settings.permits this is the least over every permit's
            // yeses, not only the confirming one's: lower, so still a bound.)
            if (const auto left = extend_number(event)) {
                const milliseconds ms =
                    std::max(milliseconds{*left} - settings_.node_extra, milliseconds{1});
                confirmed_left_ = confirmed_left_ ? std::min(*confirmed_left_, ms) : ms;
            }
            break;
        case extend_answer::other_value:
            reports_.set(node, {node_status::refused, "holds another value"});
            break;
        case extend_answer::missing:
            reports_.set(node, {node_status::refused, "the key is missing (restarted or evicted)"});
            break;
        case extend_answer::failed:
            reports_.set(node, failed_outcome(event));
            break;
    }
}

void extend_decision::conclude(quorum_tally::verdict verdict, const extend_lock_view& lock,
                               steady_clock::time_point now, extend_actions& a) {
    if (verdict == quorum_tally::verdict::pending) return;
    if (verdict == quorum_tally::verdict::lost) {
        fail(failure(),
             failure() == errc::not_held ? "a majority of nodes no longer hold it"
                                         : "fewer than a majority of nodes confirmed in time",
             lock, now, a);
        return;
    }
    const deadline_outcome outcome = new_deadline({.adopted = lock.adopted,
                                                   .old_deadline = lock.valid_until,
                                                   .started = started_,
                                                   .now = now,
                                                   .ttl = settings_.ttl,
                                                   .confirmed_left = confirmed_left_,
                                                   .drift_factor = settings_.drift_factor,
                                                   .drift_floor = settings_.drift_floor});
    if (!outcome.deadline) {
        fail(errc::not_held, outcome.why, lock, now, a);
        return;
    }
    mark_extended();
    a.end = extend_actions::ending::extended;
    a.deadline = *outcome.deadline;
    a.remaining = std::chrono::floor<milliseconds>(*outcome.deadline - now);
    a.took = now - started_;
    a.repair_missing = std::find(missing_.begin(), missing_.end(), true) != missing_.end();
}

void extend_decision::fail(errc code, std::string_view why, const extend_lock_view& lock,
                           steady_clock::time_point now, extend_actions& a) {
    a.end = extend_actions::ending::failed;
    a.code = code;
    a.message.append("cannot extend '")
        .append(lock.resource)
        .append("': ")
        .append(why)
        .append(after_failure(code, lock, now));
    a.took = now - started_;  // sent: timed
}

auto extend_decision::after_failure(errc code, const extend_lock_view& lock,
                                    steady_clock::time_point now) -> std::string_view {
    if (lock.adopted) {
        return code == errc::not_held ? "; no majority holds this value: it expired or was released"
                                      : "; the nodes that did not confirm keep the TTL they had";
    }
    if (now >= lock.valid_until) return "; it expired at its previous deadline";
    return "; it stays valid until its previous deadline";
}

auto extend_decision::on_answer(std::size_t node, extend_answer a, int permit)
    -> quorum_tally::verdict {
    if (!open_ || node >= missing_.size()) return quorum_tally::verdict::pending;
    quorum_tally::verdict v = quorum_tally::verdict::pending;
    switch (a) {
        case extend_answer::extended:
            v = tally_.yes();
            break;
        case extend_answer::missing:
            // Never counted, even if repaired later: a missing key is not ours.
            missing_[node] = true;
            v = tally_.refused();
            break;
        case extend_answer::other_value:
            v = tally_.refused();
            break;
        case extend_answer::failed:
            v = tally_.failed();
            break;
    }
    if (settings_.permits > 0) {
        // A permit of unknown index (issue 36): a yes counts only for the permit
        // that node extended, as in an acquisition. Two yeses for permit 0 and one
        // for a stray permit 1 are no majority: permit 0 may be another's there.
        permit_tally_.answer(a == extend_answer::extended ? permit : permit_tally::none);
        v = permit_tally_.won()    ? quorum_tally::verdict::won
            : permit_tally_.lost() ? quorum_tally::verdict::lost
                                   : quorum_tally::verdict::pending;
    }
    if (v != quorum_tally::verdict::pending) open_ = false;
    return v;
}

auto extend_decision::failure() const noexcept -> errc {
    if (settings_.permits > 0) {
        // Definite unless the failed (or unanswered) nodes could have made it.
        return permit_tally_.best() + tally_.failed_count() + tally_.pending() < tally_.needed()
                   ? errc::not_held
                   : errc::quorum_unreachable;
    }
    const std::size_t n =
        tally_.yes_count() + tally_.refused_count() + tally_.failed_count() + tally_.pending();
    return tally_.refused_count() > n - tally_.needed() ? errc::not_held : errc::quorum_unreachable;
}

auto extend_decision::new_deadline(const deadline_inputs& in) -> deadline_outcome {
    // Extending a lock whose validity has ended would be acquiring it afresh
    // without the checks of an acquisition.
    if (!in.adopted && in.now >= in.old_deadline)
        return {std::nullopt, "the majority confirmed only after the validity had ended"};
    // What the nodes hold, not what was asked: an adopted lock extended with a
    // shorter ttl keeps its longer TTL on the nodes, and its old deadline is
    // unknown here. The TTL was read after `started`, so all the elapsed time
    // is taken off: a lower bound.
    const milliseconds left = in.confirmed_left.value_or(in.ttl);
    const milliseconds v = validity(left, in.now - in.started, in.drift_factor, in.drift_floor);
    if (in.adopted && v <= milliseconds{0})
        return {std::nullopt, "confirmed, but with no validity left after elapsed time and drift"};
    // The script never shortens a TTL on a node, so neither does this.
    return {in.adopted ? in.now + v : std::max(in.old_deadline, in.now + v), nullptr};
}

}  // namespace redlock::detail
