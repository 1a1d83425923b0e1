#include "detail/acquire_op.hpp"

#include "detail/client_core.hpp"
#include "detail/command.hpp"
#include "detail/lock_state.hpp"
#include "detail/scripts.hpp"
#include "detail/timing.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace redlock::detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

auto classify(const reply_event& event) -> node_report {
    switch (event.status) {
        case request_status::reply:
            if (is_status_ok(event.reply)) return {{}, node_status::ok, {}};
            if (is_nil(event.reply)) return {{}, node_status::refused, "held by another owner"};
            return {{}, node_status::error, describe_reply(event.reply)};
        case request_status::timeout:
            return {{}, node_status::timeout, std::string{event.cause}};
        case request_status::unreachable:
            return {{}, node_status::unreachable, std::string{event.cause}};
        case request_status::stopped:
            return {{}, node_status::cancelled, std::string{event.cause}};
    }
    return {{}, node_status::error, "unknown outcome"};
}

}  // namespace

acquire_op::acquire_op(client_core& core, std::string resource, lock_options options,
                       client::acquire_callback done)
    : operation{core}, state_{std::make_shared<lock_state>()}, done_{std::move(done)} {
    const client_config& config = core_.config();
    state_->resource = std::move(resource);
    state_->key = config.key_prefix + state_->resource;
    state_->ttl = options.ttl.value_or(config.lock.ttl);
    min_validity_ = config.lock.min_validity;
    if (options.max_wait) wait_deadline_ = steady_clock::now() + *options.max_wait;
    // With only a wait deadline, keep trying until it passes.
    max_attempts_ = options.attempts.value_or(options.max_wait ? 0 : config.retry.attempts);
}

void acquire_op::start() {
    std::string problem;
    if (state_->resource.empty())
        problem = "the resource name is empty";
    else if (state_->ttl <= milliseconds{0})
        problem = "ttl must be greater than 0 ms";
    else if (max_attempts_ < 0)
        problem = "attempts must be at least 1";
    else if (wait_deadline_ && *wait_deadline_ < steady_clock::now() - milliseconds{1})
        problem = "max_wait must not be negative";
    if (!problem.empty()) {
        final_error_ = error{make_error_code(errc::invalid_argument), problem, {}, 0};
        // Never inside the caller: deliver on a later loop turn.
        timer_pending_ = true;
        retry_timer_ = core_.timers().schedule(milliseconds{0}, [this] {
            timer_pending_ = false;
            finish_failure();
            maybe_retire();
        });
        return;
    }
    state_->value = core_.rng().lock_value();
    begin_attempt();
}

void acquire_op::begin_attempt() {
    ++attempt_;
    core_.op_counters().attempts.fetch_add(1, std::memory_order_relaxed);
    const std::size_t n = core_.node_count();
    tally_ = quorum_tally{n};
    reports_.clear();
    for (std::size_t i = 0; i < n; ++i) {
        reports_.push_back(node_report{core_.node(i).name(), node_status::cancelled, "no answer"});
    }
    attempt_open_ = true;
    attempt_start_ = steady_clock::now();
    const std::string ttl = std::to_string(state_->ttl.count());
    for (std::size_t i = 0; i < n; ++i) {
        send(i, {"SET", state_->key, state_->value, "NX", "PX", ttl},
             make_tag(attempt_, set_kind, i));
    }
}

void acquire_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t node = tag_node(tag);
    switch (tag_kind(tag)) {
        case set_kind:
            if (tag_attempt(tag) != attempt_) return;  // its release was queued behind it
            if (attempt_open_) {
                on_set_outcome(node, event);
            } else if (!finished_) {
                record(node, event);  // a straggler: keep the failure report complete
            }
            return;
        case release_sha_kind:
            if (event.status == request_status::reply && is_noscript(event.reply)) {
                --releases_pending_;       // this request is done; its EVAL replaces it
                send_release(node, true);  // the node lost its script cache: load it via EVAL
                return;
            }
            [[fallthrough]];
        default:
            --releases_pending_;
            if (releases_pending_ == 0 && final_error_ && !finished_) finish_failure();
            return;
    }
}

auto acquire_op::record(std::size_t node, const reply_event& event) -> node_status {
    node_report report = classify(event);
    report.node = core_.node(node).name();
    const node_status status = report.status;
    reports_[node] = std::move(report);
    return status;
}

void acquire_op::on_set_outcome(std::size_t node, const reply_event& event) {
    const node_status status = record(node, event);
    quorum_tally::verdict verdict = quorum_tally::verdict::pending;
    if (status == node_status::ok)
        verdict = tally_.yes();
    else if (status == node_status::refused)
        verdict = tally_.refused();
    else
        verdict = tally_.failed();
    decide(verdict);
}

void acquire_op::decide(quorum_tally::verdict verdict) {
    if (verdict == quorum_tally::verdict::pending) return;
    attempt_open_ = false;
    if (verdict == quorum_tally::verdict::lost) {
        const std::size_t n = core_.node_count();
        // Without the failed nodes a majority was out of reach whatever the
        // others said: the deployment, not a competitor, is the problem.
        const bool unreachable = tally_.failed_count() > n - tally_.needed();
        fail_attempt(unreachable ? errc::quorum_unreachable : errc::contended);
        return;
    }
    const auto now = steady_clock::now();
    const milliseconds v =
        validity(state_->ttl, now - attempt_start_, core_.config().clock_drift_factor,
                 core_.config().clock_drift_floor);
    if (v < min_validity_) {
        fail_attempt(errc::validity_expired, v);
        return;
    }
    finish_success(v, now);
}

void acquire_op::finish_success(milliseconds validity, steady_clock::time_point decided_at) {
    state_->set_valid_until(decided_at + validity);
    finished_ = true;
    core_.op_counters().acquired.fetch_add(1, std::memory_order_relaxed);
    deliver(done_, lock_state::handle(state_));
}

void acquire_op::fail_attempt(errc reason, std::optional<milliseconds> validity) {
    release_everywhere();
    const auto now = steady_clock::now();
    const client_config& config = core_.config();
    const bool budget_left = max_attempts_ == 0 || static_cast<int>(attempt_) < max_attempts_;
    const auto delay = config.retry.delay + core_.rng().jitter(config.retry.jitter);
    auto next = now + delay;
    bool retry = budget_left && !cancelled_;
    if (retry && wait_deadline_) {
        // The last attempt starts no later than the deadline, not after it.
        if (now + config.retry.delay >= *wait_deadline_) retry = false;
        next = std::min(next, *wait_deadline_);
    }
    if (retry) {
        timer_pending_ = true;
        retry_timer_ = core_.timers().schedule(std::chrono::ceil<milliseconds>(next - now), [this] {
            timer_pending_ = false;
            if (!cancelled_) begin_attempt();
            maybe_retire();
        });
        return;
    }
    give_up(reason, validity);
}

void acquire_op::give_up(errc reason, std::optional<milliseconds> validity) {
    const errc code = cancelled_.value_or(reason);
    std::string note;
    if (validity) note = "validity left: " + std::to_string(validity->count()) + " ms";
    final_error_ = error{make_error_code(code), std::move(note), {}, static_cast<int>(attempt_)};
    // The caller learns of the failure once the releases have been answered, so
    // that no key of this attempt is left behind when it does.
    if (releases_pending_ == 0) finish_failure();
}

void acquire_op::release_everywhere() {
    // Every node, including those that failed or timed out: their SET may have
    // landed, and the release queued behind it on the same connection undoes it.
    // Where the outcome is unknown, the release may run long after we stopped
    // waiting for it, so it goes as EVAL: a NOSCRIPT there would go unseen.
    for (std::size_t i = 0; i < core_.node_count(); ++i) {
        const node_status s = reports_[i].status;
        const bool unknown = s == node_status::timeout || s == node_status::cancelled ||
                             s == node_status::unreachable;
        send_release(i, unknown);
    }
}

void acquire_op::send_release(std::size_t node, bool eval) {
    ++releases_pending_;
    send_script(node, release_script(), eval, {state_->key}, {state_->value},
                make_tag(attempt_, eval ? release_eval_kind : release_sha_kind, node));
}

void acquire_op::finish_failure() {
    if (finished_) return;
    finished_ = true;
    core_.op_counters().acquire_failures.fetch_add(1, std::memory_order_relaxed);
    error& e = *final_error_;
    if (e.code != errc::invalid_argument) {
        // Built now, not at the decision: stragglers have answered by now.
        std::string note = std::move(e.message);
        e.message = describe_failure(static_cast<errc>(e.code.value()));
        if (!note.empty()) e.message += " (" + note + ")";
        e.nodes = reports_;
    }
    deliver(done_, result<lock>{failure{std::move(e)}});
}

void acquire_op::cancel(errc why) {
    if (finished_ || cancelled_) return;
    cancelled_ = why;
    if (timer_pending_ && core_.timers().cancel(retry_timer_)) {
        timer_pending_ = false;
        if (final_error_) {
            finish_failure();  // an argument error waiting for its delivery turn
        } else {
            give_up(why);  // between attempts: the last one was released already
        }
    } else if (attempt_open_) {
        attempt_open_ = false;
        fail_attempt(why);
    }
    maybe_retire();
}

auto acquire_op::granted_count() const noexcept -> std::size_t {
    return static_cast<std::size_t>(
        std::count_if(reports_.begin(), reports_.end(),
                      [](const node_report& r) { return r.status == node_status::ok; }));
}

auto acquire_op::describe_failure(errc reason) const -> std::string {
    std::string what;
    switch (reason) {
        case errc::contended:
            what = "is held by another owner";
            break;
        case errc::quorum_unreachable:
            what = "could not be locked: a majority of nodes did not answer";
            break;
        case errc::validity_expired:
            what = "was granted too late: no validity left after elapsed time and clock drift";
            break;
        case errc::cancelled:
            what = "was not locked: the acquisition was cancelled";
            break;
        case errc::client_stopped:
            what = "was not locked: the client was shut down";
            break;
        default:
            what = "could not be locked";
            break;
    }
    std::string message = "resource '" + state_->resource + "' " + what + " (" +
                          std::to_string(attempt_) + (attempt_ == 1 ? " attempt" : " attempts") +
                          "; last attempt: " + std::to_string(granted_count()) + " of " +
                          std::to_string(core_.node_count()) + " nodes granted, " +
                          std::to_string(tally_.needed()) + " needed";
    for (const auto& r : reports_) {
        if (r.status == node_status::ok) continue;
        message += "; " + r.node + " " + to_string(r.status);
        if (!r.detail.empty()) message += ": " + r.detail;
    }
    message += ")";
    return message;
}

}  // namespace redlock::detail
