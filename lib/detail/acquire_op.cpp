#include "detail/acquire_op.hpp"

#include "detail/client_core.hpp"
#include "detail/command.hpp"
#include "detail/lock_state.hpp"
#include "detail/scripts.hpp"
#include "detail/timing.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>
#include <string>
#include <utility>

namespace redlock::detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

}  // namespace

acquire_op::acquire_op(client_core& core, std::vector<std::string> resources, lock_options options,
                       client::acquire_callback done, client::acquire_ticket ticket)
    : operation{core},
      state_{std::make_shared<lock_state>()},
      done_{std::move(done)},
      max_wait_{options.max_wait},
      ticket_{ticket} {
    const client_config& config = core_.config();
    state_->resources = std::move(resources);
    state_->ttl = options.ttl.value_or(config.lock.ttl);
    state_->auto_renew = options.auto_renew.value_or(config.lock.auto_renew);
    if (state_->auto_renew) state_->lost_source = std::stop_source{};
    if (options.on_lost) {
        state_->on_lost = std::make_unique<std::function<void(const lock&, const error&)>>(
            std::move(options.on_lost));
    }
    fencing_ = options.fencing.value_or(config.lock.fencing);
    wait_mode_ = options.wait.value_or(config.lock.wait);
    state_->wake = wait_mode_ == wait_mode::broadcast ? 'a'
                   : wait_mode_ == wait_mode::poll    ? '0'
                                                      : '1';
    scripted_ = fencing_ || state_->resources.size() > 1;
    min_validity_ = config.lock.min_validity;
    if (max_wait_) {
        // Saturating: a wait of milliseconds::max() means "as long as it takes",
        // and now() + max_wait must not overflow the clock's nanoseconds.
        const auto now = steady_clock::now();
        const auto room =
            std::chrono::duration_cast<milliseconds>(steady_clock::time_point::max() - now);
        wait_deadline_ = *max_wait_ >= room ? steady_clock::time_point::max() : now + *max_wait_;
    }
    // With only a wait deadline, keep trying until it passes.
    max_attempts_ = options.attempts.value_or(max_wait_ ? 0 : config.retry.attempts);
    // Queue and notifications serve a single resource that may be retried.
    // Acquisitions given a wait deadline wait for the holder: sleeping until
    // its key could expire, woken early by its release. With an attempt
    // budget alone they retry after retry.delay + jitter, as asked.
    waiting_ =
        max_wait_.has_value() && state_->resources.size() == 1 && wait_mode_ != wait_mode::poll;
    if (waiting_) wait_ = std::make_unique<wait_fields>();
}

auto acquire_op::check_arguments() const -> std::string {
    const client_config& config = core_.config();
    if (state_->resources.empty()) return "no resource to lock";
    for (const auto& r : state_->resources) {
        if (r.empty()) return "a resource name is empty";
    }
    if (state_->resources.size() > 1 &&
        std::set<std::string>(state_->resources.begin(), state_->resources.end()).size() !=
            state_->resources.size()) {
        return "a resource is named twice";
    }
    if (state_->ttl <= milliseconds{0}) return "ttl must be greater than 0 ms";
    if (state_->ttl > max_ttl) return "ttl must be at most 2147483647 ms";
    if (max_attempts_ < 0) return "attempts must be at least 1";
    if (max_wait_ && *max_wait_ < milliseconds{0}) return "max_wait must not be negative";
    if (fencing_ && state_->resources.size() > 1) {
        return "fencing tokens are available for a single resource only";
    }
    if (fencing_ && (config.key_prefix.starts_with(config.fence_prefix) ||
                     config.fence_prefix.starts_with(config.key_prefix))) {
        return "fencing needs a fence_prefix and a key_prefix that do not start with each other";
    }
    return {};
}

void acquire_op::start() {
    if (std::string problem = check_arguments(); !problem.empty()) {
        final_error_ = std::make_unique<error>(
            error{make_error_code(errc::invalid_argument), std::move(problem), {}, 0});
        retry_timer_ = after(milliseconds{0}, [this] { finish_failure(); });
        return;
    }
    if (waiting_) {
        wait_->waiter_id = core_.client_id() + ":" + std::to_string(ticket_);
        // Queue position: the wall clock only orders waiters (it decides nothing
        // about safety), and it is the same on every node.
        wait_->arrival_text =
            std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count());
        wait_->liveness_text = std::to_string(core_.config().lock.waiter_ttl.count());
    }
    begin_attempt();
}

// ---- round 1: grant ------------------------------------------------------------------------

void acquire_op::begin_attempt() {
    ++attempt_;
    // A fresh value for every attempt: a release of an earlier attempt that
    // arrives late (on a connection given up and recycled) must never delete
    // what this attempt is granted. It compares against the old value.
    state_->value = core_.rng().lock_value();
    core_.op_counters().attempts.fetch_add(1, std::memory_order_relaxed);
    const std::size_t n = core_.node_count();
    tally_ = quorum_tally{n};
    max_counter_ = 0;
    if (waiting_) wait_->holder_ttl.assign(n, -2);
    reports_.reset(n);
    phase_ = phase::granting;
    attempt_start_ = steady_clock::now();
    // Registered before the first request: the script queues us on a node at
    // once, and a release there may notify us before this attempt has failed.
    if (waiting_ && attempt_ == 1) core_.add_waiter(wait_->waiter_id, this);
    const encoded_command grant = grant_command(false);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t number = send(i, grant, make_tag(attempt_, grant_kind(false), i));
        if (i < grant_numbers_.size()) grant_numbers_[i] = number;
    }
}

auto acquire_op::grant_kind(bool eval) const noexcept -> kind {
    if (!waiting_ && !scripted_) return set_kind;
    return eval ? script_eval_kind : script_sha_kind;
}

auto acquire_op::grant_command(bool eval) const -> encoded_command {
    // Text made here rather than kept: a thousand acquisitions in flight hold
    // a thousand of this object.
    std::array<char, 24> ttl_buf{};
    const std::string_view ttl_text{
        ttl_buf.data(),
        static_cast<std::size_t>(
            std::to_chars(ttl_buf.data(), ttl_buf.data() + ttl_buf.size(), state_->ttl.count())
                .ptr -
            ttl_buf.data())};
    const lock_keys keys = keys_of(*state_);
    if (waiting_) {
        const std::string fence = fencing_ ? fence_key() : std::string{};  // empty: no counter
        return script_call(wait_acquire_script(), eval,
                           {keys.front(), fence, queue_key(*state_).view()},
                           {state_->value, ttl_text, wait_->waiter_id, wait_->liveness_text,
                            wait_mode_ == wait_mode::fair ? "f" : "t", wait_->arrival_text});
    }
    if (!scripted_) return {"SET", keys.front(), state_->value, "NX", "PX", ttl_text};
    if (fencing_) {
        return script_call(acquire_script(), eval, {keys.front(), fence_key()},
                           {state_->value, ttl_text, "1"});
    }
    return script_call(acquire_script(), eval, keys.all(), {state_->value, ttl_text, "0"});
}

void acquire_op::send_grant(std::size_t node, bool eval) {
    const std::uint32_t number =
        send(node, grant_command(eval), make_tag(attempt_, grant_kind(eval), node));
    if (node < grant_numbers_.size()) grant_numbers_[node] = number;
}

void acquire_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t node = tag_node(tag);
    const auto k = static_cast<kind>(tag_kind(tag));
    const bool current = tag_attempt(tag) == attempt_;
    const bool noscript = event.status == request_status::reply && is_noscript(event.reply);

    if (k == release_sha_kind || k == release_eval_kind || k == dequeue_kind) {
        --releases_pending_;  // this request is done; a NOSCRIPT is replaced by its EVAL
        if (noscript && k == release_sha_kind) send_release(node, true);  // (dequeue goes as EVAL)
        if (releases_pending_ == 0 && final_error_ && !finished_) finish_failure();
        return;
    }
    if (!current) return;  // an earlier attempt: its release was queued behind it

    const bool confirm = k == confirm_sha_kind || k == confirm_eval_kind;
    // A node that lost its script cache (restart, SCRIPT FLUSH) is asked again
    // with EVAL, which loads the script there, while the question is still open.
    if (noscript && k == script_sha_kind && phase_ == phase::granting) {
        send_grant(node, true);
    } else if (noscript && k == confirm_sha_kind && phase_ == phase::confirming) {
        send_confirm(node, true);
    } else if (confirm && phase_ == phase::confirming) {
        on_confirm(node, event);
    } else if (!confirm && phase_ == phase::granting) {
        on_grant(node, event);
    } else if (phase_ == phase::decided && final_error_ && !finished_) {
        // A straggler of the failed last attempt, answering before its release
        // (same connection, in order): keep the failure report complete.
        reports_.set(node, outcome_of(event, confirm));
    }
}

auto acquire_op::outcome_of(const reply_event& event, bool confirm) const -> node_outcome {
    node_outcome r;
    if (event.status != request_status::reply || is_error(event.reply)) {
        r = failed_outcome(event);
    } else {
        std::optional<long long> yes;
        if (confirm) {
            yes = integer_of(event.reply);
        } else if (scripted_ || waiting_) {
            yes = array_integer(event.reply, 0);
        } else if (is_status_ok(event.reply)) {
            yes = 1;
        } else if (is_nil(event.reply)) {
            yes = 0;
        }
        if (yes == 1) {
            r = {node_status::ok, {}};
        } else if (yes == 0) {
            r = {node_status::refused, confirm ? "no longer holds our value at the fencing round"
                                               : "held by another owner"};
        } else {
            r = {node_status::error, describe_reply(event.reply)};
        }
    }
    return r;
}

void acquire_op::on_grant(std::size_t node, const reply_event& event) {
    if (waiting_ && event.status == request_status::reply) {
        wait_->holder_ttl[node] = array_integer(event.reply, 2).value_or(-2);
        if (array_integer(event.reply, 0) == 0) queued_ = true;  // a refusal enqueues us there
    }
    if (scripted_ && event.status == request_status::reply) {
        // Counters count whether or not this node granted: reading one is safe,
        // and a higher reading only raises the token.
        if (const auto counter = array_integer(event.reply, 1); counter && *counter > 0) {
            max_counter_ = std::max(max_counter_, static_cast<std::uint64_t>(*counter));
        }
    }
    reports_.set(node, outcome_of(event, false));
    discount_if_quarantined(node);
    const quorum_tally::verdict verdict = tally_.outcome(reports_.status(node));
    decide_grant(verdict);
}

void acquire_op::discount_if_quarantined(std::size_t node) {
    if (reports_.status(node) != node_status::ok || core_.node(node).grants_count()) return;
    // It said yes, but it restarted without persisting every write and may have
    // forgotten a lock another client holds: its yes is not counted (the key it
    // set is released with the rest if the attempt fails).
    const auto left =
        std::chrono::ceil<milliseconds>(core_.node(node).quarantined_until() - steady_clock::now());
    reports_.set(node, {node_status::error,
                        "restarted without persisting every write; its grants count again in " +
                            std::to_string(left.count()) + " ms"});
}

auto acquire_op::failed_majority(const quorum_tally& tally) const noexcept -> errc {
    // Without the failed nodes a majority was out of reach whatever the others
    // said: the deployment, not a competitor, is the problem.
    return tally.failed_count() > core_.node_count() - tally.needed() ? errc::quorum_unreachable
                                                                      : errc::contended;
}

void acquire_op::decide_grant(quorum_tally::verdict verdict) {
    if (verdict == quorum_tally::verdict::pending) return;
    if (verdict == quorum_tally::verdict::lost) {
        phase_ = phase::decided;
        fail_attempt(failed_majority(tally_));
        return;
    }
    if (!fencing_) {
        phase_ = phase::decided;
        conclude(steady_clock::now());
        return;
    }
    // Round 2: every counter seen so far only raises the token, and every node
    // is raised to it, so a later holder's round 1 reads at least this value.
    token_ = max_counter_ + 1;
    phase_ = phase::confirming;
    confirm_tally_ = quorum_tally{core_.node_count()};
    const encoded_command confirm = confirm_command(false);
    for (std::size_t i = 0; i < core_.node_count(); ++i)
        send(i, confirm, make_tag(attempt_, confirm_sha_kind, i));
}

// ---- round 2: fencing confirm --------------------------------------------------------------

auto acquire_op::fence_key() const -> std::string {
    return core_.config().fence_prefix + state_->resources.front();
}

auto acquire_op::confirm_command(bool eval) const -> encoded_command {
    const lock_keys keys = keys_of(*state_);
    return script_call(fence_confirm_script(), eval, {keys.front(), fence_key()},
                       {state_->value, std::to_string(token_)});
}

void acquire_op::send_confirm(std::size_t node, bool eval) {
    send(node, confirm_command(eval),
         make_tag(attempt_, eval ? confirm_eval_kind : confirm_sha_kind, node));
}

void acquire_op::on_confirm(std::size_t node, const reply_event& event) {
    reports_.set(node, outcome_of(event, true));
    discount_if_quarantined(node);
    const quorum_tally::verdict verdict = confirm_tally_.outcome(reports_.status(node));
    decide_confirm(verdict);
}

void acquire_op::decide_confirm(quorum_tally::verdict verdict) {
    if (verdict == quorum_tally::verdict::pending) return;
    phase_ = phase::decided;
    if (verdict == quorum_tally::verdict::lost) {
        fail_attempt(failed_majority(confirm_tally_));
        return;
    }
    state_->fence = token_;
    conclude(steady_clock::now());
}

// ---- outcome --------------------------------------------------------------------------------

void acquire_op::conclude(steady_clock::time_point now) {
    // Counted from the first request of the attempt, round 2 included.
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
    if (limited_) core_.acquisition_finished();
    // The nodes yet to answer the grant: their replies change nothing now (the
    // release goes to every node), and waiting for them would keep this object
    // alive. With a thousand locks in flight, most decided acquisitions were
    // such stragglers' hostages (docs/benchmarks.md).
    if (core_.node_count() <= grant_numbers_.size()) {
        for (std::size_t i = 0; i < core_.node_count(); ++i) {
            if (reports_.status(i) == node_status::cancelled) disown(i, grant_numbers_[i]);
        }
    }
    reports_.release_memory();  // only a failure is described; stragglers are ignored
    core_.op_counters().acquired.fetch_add(1, std::memory_order_relaxed);
    if (state_->auto_renew) core_.watch(state_);
    // Still queued where the grant came late? The release takes us out there.
    if (waiting_) {
        core_.remove_waiter(wait_->waiter_id);
        state_->waiter_id = wait_->waiter_id;
    }
    deliver(done_, lock_state::handle(state_));
}

void acquire_op::fail_attempt(errc reason, std::optional<milliseconds> validity) {
    release_everywhere();
    const auto now = steady_clock::now();
    const client_config& config = core_.config();
    const bool budget_left = max_attempts_ == 0 || static_cast<int>(attempt_) < max_attempts_;
    auto next = now + (waiting_ ? wait_delay(reason)
                                : config.retry.delay + core_.rng().jitter(config.retry.jitter));
    if (woken_) next = now;  // a release arrived while this attempt was in flight
    woken_ = false;
    bool retry = budget_left && !cancelled_;
    if (retry && wait_deadline_) {
        // The last attempt starts no later than the deadline, not after it.
        const auto shortest = waiting_ ? milliseconds{1} : config.retry.delay;
        if (now + shortest >= *wait_deadline_) retry = false;
        next = std::min(next, *wait_deadline_);
    }
    if (retry) {
        retry_timer_ = after(std::chrono::ceil<milliseconds>(next - now), [this] {
            if (!cancelled_) begin_attempt();
        });
        return;
    }
    give_up(reason, validity);
}

void acquire_op::give_up(errc reason, std::optional<milliseconds> validity) {
    const errc code = cancelled_.value_or(reason);
    std::string note;
    if (validity) note = "validity left: " + std::to_string(validity->count()) + " ms";
    final_error_ = std::make_unique<error>(
        error{make_error_code(code), std::move(note), {}, static_cast<int>(attempt_)});
    leave_queue(true);
    // The caller learns of the failure once the releases have been answered, so
    // that no key of this attempt is left behind when it does.
    if (releases_pending_ == 0) finish_failure();
}

void acquire_op::release_everywhere() {
    // Every node whose outcome is granted or unknown, those that failed or timed
    // out included: their SET may have landed, and the release queued behind it
    // on the same connection undoes it. A definite "held by another owner"
    // needs no release. Where the outcome is unknown, the release may run long
    // after we stopped waiting for it, so it goes as EVAL: a NOSCRIPT there
    // would go unseen. Each form is encoded once, for every node it goes to.
    std::optional<encoded_command> by_sha;
    std::optional<encoded_command> by_eval;
    for (std::size_t i = 0; i < core_.node_count(); ++i) {
        const node_status s = reports_.status(i);
        if (s == node_status::refused) continue;
        const bool unknown = s == node_status::timeout || s == node_status::cancelled ||
                             s == node_status::unreachable;
        std::optional<encoded_command>& command = unknown ? by_eval : by_sha;
        if (!command) command.emplace(release_command(unknown));
        ++releases_pending_;
        send(i, *command, make_tag(attempt_, unknown ? release_eval_kind : release_sha_kind, i));
    }
}

auto acquire_op::wait_delay(errc reason) const -> milliseconds {
    const client_config& config = core_.config();
    // Never longer than half the queue entry's life, so it stays alive; a
    // notification usually comes much sooner.
    milliseconds longest = std::max(config.lock.waiter_ttl / 2, milliseconds{1});
    // Until our subscriptions are confirmed a release could go unheard: check
    // back soon rather than sleep on a notification that may never come.
    if (!core_.subscribed())
        longest = std::min(longest, std::max(config.request_timeout * 2, milliseconds{10}));
    if (reason != errc::contended) {
        return std::min(longest, config.retry.delay + core_.rng().jitter(config.retry.jitter));
    }
    // The lock can be had once a majority is free: the nodes not held by
    // another owner now, plus those whose holder's key expires first.
    std::vector<long long> held;
    for (std::size_t i = 0; i < reports_.size(); ++i) {
        if (reports_.status(i) == node_status::refused && wait_->holder_ttl[i] > 0)
            held.push_back(wait_->holder_ttl[i]);
    }
    std::sort(held.begin(), held.end());
    // Free now: nodes that granted us (released since) or answered with no key
    // (fair: queued behind someone). A node that timed out or is down is not
    // free: counting it so would make a waiter spin while a holder's node is out.
    std::size_t free_now = 0;
    for (std::size_t i = 0; i < reports_.size(); ++i) {
        if (reports_.status(i) == node_status::ok ||
            (reports_.status(i) == node_status::refused && wait_->holder_ttl[i] == -2)) {
            ++free_now;
        }
    }
    const std::size_t needed = quorum(core_.node_count());
    if (free_now >= needed) {
        // Fair: a live waiter is ahead, and its release will tell us. Otherwise
        // the holder's keys were expiring as we asked: look again shortly.
        return wait_mode_ == wait_mode::fair
                   ? longest
                   : std::min(longest, milliseconds{2} + core_.rng().jitter(milliseconds{3}));
    }
    if (held.empty()) return longest;
    const std::size_t k = std::min(needed - free_now, held.size());
    return std::min(longest, milliseconds{held[k - 1] + 1});
}

void acquire_op::wake() {
    if (finished_ || cancelled_) return;
    // Every node that runs the release tells us. The first notice can arrive
    // before the release has run on a majority, so a later notice of the same
    // release is not ignored: it retries what may have been too early. While an
    // attempt is in flight, notices only ask for one retry after it.
    if (timer_pending_ && core_.timers().cancel(retry_timer_)) {
        timer_pending_ = false;
        begin_attempt();  // our turn (or the holder let go): try at once
        return;
    }
    woken_ = true;  // mid-attempt: retry at once if this one fails
}

void acquire_op::leave_queue(bool everywhere) {
    if (!waiting_) return;
    core_.remove_waiter(wait_->waiter_id);
    if (!queued_) return;  // no node ever refused us, so none queued us
    // The grant itself left the queue on the nodes that granted.
    const encoded_command dequeue =
        script_call(dequeue_script(), true, {queue_key(*state_).view()}, {wait_->waiter_id});
    for (std::size_t i = 0; i < core_.node_count(); ++i) {
        if (!everywhere && reports_.status(i) == node_status::ok) continue;
        ++releases_pending_;  // cleanup, awaited like a release before a failure is reported
        send(i, dequeue, make_tag(attempt_, dequeue_kind, i));
    }
}

auto acquire_op::release_command(bool eval) const -> encoded_command {
    return release_call(*state_, eval, {});
}

void acquire_op::send_release(std::size_t node, bool eval) {
    ++releases_pending_;
    send(node, release_command(eval),
         make_tag(attempt_, eval ? release_eval_kind : release_sha_kind, node));
}

void acquire_op::finish_failure() {
    if (finished_) return;
    finished_ = true;
    if (limited_) core_.acquisition_finished();
    core_.op_counters().acquire_failures.fetch_add(1, std::memory_order_relaxed);
    error& e = *final_error_;
    if (e.code != errc::invalid_argument) {
        // Built now, not at the decision: stragglers have answered by now.
        std::string note = std::move(e.message);
        e.message = describe_failure(static_cast<errc>(e.code.value()));
        if (!note.empty()) e.message += " (" + note + ")";
        e.nodes = reports_.to_reports([this](std::size_t i) { return core_.node(i).name(); });
    }
    deliver(done_, result<lock>{failure{std::move(e)}});
}

void acquire_op::cancel(errc why) {
    if (finished_ || cancelled_) return;
    cancelled_ = why;
    if (waiting_) core_.remove_waiter(wait_->waiter_id);
    if (timer_pending_ && core_.timers().cancel(retry_timer_)) {
        timer_pending_ = false;
        if (final_error_) {
            finish_failure();  // an argument error waiting for its delivery turn
        } else {
            give_up(why);  // between attempts: the last one was released already
        }
    } else if (phase_ != phase::decided) {
        phase_ = phase::decided;
        fail_attempt(why);
    }
    maybe_retire();
}

auto acquire_op::granted_count() const noexcept -> std::size_t {
    return static_cast<std::size_t>(reports_.count(node_status::ok));
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
    std::string names = "'" + state_->resources.front() + "'";
    for (std::size_t i = 1; i < state_->resources.size(); ++i)
        names += ", '" + state_->resources[i] + "'";
    std::string message = (state_->resources.size() == 1 ? "resource " : "resources ") + names +
                          " " + what + " (" + std::to_string(attempt_) +
                          (attempt_ == 1 ? " attempt" : " attempts") +
                          "; last attempt: " + std::to_string(granted_count()) + " of " +
                          std::to_string(core_.node_count()) + " nodes " +
                          (fencing_ ? "granted or confirmed, " : "granted, ") +
                          std::to_string(quorum(core_.node_count())) + " needed";
    reports_.append_problems(message, [this](std::size_t i) { return core_.node(i).name(); });
    message += ")";
    return message;
}

}  // namespace redlock::detail
