#include "operations/acquire_op.hpp"

#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/scripts.hpp"
#include "sansio/timing.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <string>
#include <utility>

namespace redlock::detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// The decision's settings, from the client's defaults and this call's options.
auto settings_of(const client_config& config, std::size_t resources, const lock_options& options)
    -> acquire_settings {
    acquire_settings s;
    s.nodes = config.nodes.size();
    // A reader reads the fence counter in its grant; only a writer raises it.
    s.fencing = options.fencing.value_or(config.lock.fencing) && !options.shared.value_or(false) &&
                !options.permits;
    s.permits = options.permits.value_or(0);
    s.mode = options.wait.value_or(config.lock.wait);
    s.ttl = options.ttl.value_or(config.lock.ttl);
    s.min_validity = config.lock.min_validity;
    s.drift_factor = config.clock_drift_factor;
    s.drift_floor = config.clock_drift_floor;
    s.retry = config.retry;
    s.waiter_ttl = config.lock.waiter_ttl;
    s.request_timeout = config.request_timeout;
    if (options.max_wait) {
        // Saturating: a wait of milliseconds::max() means "as long as it takes",
        // and now() + max_wait must not overflow the clock's nanoseconds.
        const auto now = steady_clock::now();
        const auto room =
            std::chrono::duration_cast<milliseconds>(steady_clock::time_point::max() - now);
        s.deadline =
            *options.max_wait >= room ? steady_clock::time_point::max() : now + *options.max_wait;
    }
    // With only a wait deadline, keep trying until it passes.
    s.max_attempts = options.attempts.value_or(options.max_wait ? 0 : config.retry.attempts);
    // Queue and notifications serve a single resource that may be retried.
    // Acquisitions given a wait deadline wait for the holder: sleeping until
    // its key could expire, woken early by its release. With an attempt
    // budget alone they retry after retry.delay + jitter, as asked.
    s.waiting = options.max_wait.has_value() && resources == 1 && s.mode != wait_mode::poll;
    return s;
}

}  // namespace

acquire_op::acquire_op(op_context& ctx, std::vector<std::string> resources, lock_options options,
                       client::acquire_callback done, client::acquire_ticket ticket)
    : operation{ctx},
      state_{std::make_shared<lock_state>()},
      done_{std::move(done)},
      decision_{settings_of(ctx.config(), resources.size(), options), *this},
      ticket_{ticket} {
    const acquire_settings& s = decision_.settings();
    state_->resources = std::move(resources);
    state_->ttl = s.ttl;
    if (options.permits) {
        state_->kind = lock_kind::permit;
        state_->permits = *options.permits;
    } else if (options.shared.value_or(false)) {
        state_->kind = lock_kind::shared;
        read_fence_ = options.fencing.value_or(ctx.config().lock.fencing);
    }
    if (options.owner) state_->owner = *options.owner;
    state_->auto_renew = options.auto_renew.value_or(ctx.config().lock.auto_renew);
    if (state_->auto_renew) state_->lost_source = std::stop_source{};
    if (options.on_lost) {
        state_->on_lost = std::make_unique<std::function<void(const lock&, const error&)>>(
            std::move(options.on_lost));
    }
    state_->wake = s.mode == wait_mode::broadcast ? 'a' : s.mode == wait_mode::poll ? '0' : '1';
    scripted_ = s.fencing || state_->resources.size() > 1 || state_->kind != lock_kind::exclusive;
    if (s.waiting) wait_ = std::make_unique<wait_fields>();
    if (std::string problem = check_arguments(options); !problem.empty()) {
        argument_error_ = std::make_unique<error>(
            error{make_error_code(errc::invalid_argument), std::move(problem), {}, 0});
    }
}

// ---- the decision's environment -------------------------------------------------------------

auto acquire_op::now() -> steady_clock::time_point {
    return steady_clock::now();
}

auto acquire_op::random() -> std::uint64_t {
    return ctx_.rng().next();
}

auto acquire_op::subscribed() -> bool {
    return ctx_.waiters().subscribed();
}

// ---- events in -------------------------------------------------------------------------------

void acquire_op::start() {
    started_ = steady_clock::now();
    if (argument_error_) {
        retry_timer_ = after(milliseconds{0}, [this] { finish_failure(); });
        return;
    }
    if (wait_) {
        wait_->waiter_id = ctx_.client_id() + ":" + std::to_string(ticket_);
        // Queue position: the wall clock only orders waiters (it decides nothing
        // about safety), and it is the same on every node.
        wait_->arrival =
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count());
        wait_->arrival_text = std::to_string(wait_->arrival);
        wait_->liveness_text = std::to_string(ctx_.config().lock.waiter_ttl.count());
    }
    perform(decision_.start());
}

void acquire_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t node = tag_node(tag);
    const auto k = static_cast<kind>(tag_kind(tag));
    const bool noscript = event.status == request_status::reply && is_noscript(event.answer);

    if (k == stray_sha_kind || k == stray_eval_kind) {
        if (noscript && k == stray_sha_kind) send_stray_release(node, true);
        return;  // best effort: the permit's own TTL bounds what a lost one costs
    }
    if (k == release_sha_kind || k == release_eval_kind || k == dequeue_kind) {
        // This request is done; a NOSCRIPT is replaced by its EVAL, which the
        // decision counts as the same cleanup (a dequeue goes as EVAL already).
        if (noscript && k == release_sha_kind) {
            send_release(node, true);
            return;
        }
        perform(decision_.on_cleanup_answered());
        return;
    }
    if (tag_attempt(tag) != decision_.attempt()) return;  // an earlier attempt: released since

    const bool confirm = k == confirm_sha_kind || k == confirm_eval_kind;
    // A node that lost its script cache (restart, SCRIPT FLUSH) is asked again
    // with EVAL, which loads the script there, while the question is still open.
    if (noscript && k == script_sha_kind && decision_.open_for_grants()) {
        send_grant(node, true);
    } else if (noscript && k == confirm_sha_kind && decision_.open_for_confirms()) {
        send_confirm(node, true);
    } else if (confirm && decision_.open_for_confirms()) {
        node_outcome outcome = outcome_of(event, true);
        discount_if_quarantined(node, outcome);
        perform(decision_.on_confirm(node, std::move(outcome)));
    } else if (!confirm && decision_.open_for_grants()) {
        note_held_resource(event);
        perform(decision_.on_grant(node, grant_answer_of(node, event)));
    } else {
        decision_.on_straggler(node, outcome_of(event, confirm));
    }
}

void acquire_op::wake() {
    if (!finished_) perform(decision_.on_wake());
}

void acquire_op::cancel(errc why) {
    if (finished_) return;
    if (wait_) ctx_.waiters().remove(wait_->waiter_id);
    if (argument_error_) {
        // An argument error waiting for its delivery turn: deliver it now.
        if (timer_pending_ && ctx_.timers().cancel(retry_timer_)) {
            timer_pending_ = false;
            finish_failure();
        }
    } else {
        perform(decision_.on_cancel(why));
    }
    maybe_retire();
}

// ---- what the nodes said ---------------------------------------------------------------------

auto acquire_op::outcome_of(const reply_event& event, bool confirm) const -> node_outcome {
    if (event.status != request_status::reply || is_error(event.answer)) {
        return failed_outcome(event);
    }
    std::optional<long long> yes;
    if (confirm) {
        yes = integer_of(event.answer);
    } else if (scripted_ || wait_) {
        // An array, or for a plain reader's grant a bare integer.
        yes = integer_of(event.answer);
        if (!yes) yes = array_integer(event.answer, 0);
    } else if (is_status_ok(event.answer)) {
        yes = 1;
    } else if (is_nil(event.answer)) {
        yes = 0;
    }
    if (yes == 1) return {node_status::ok, {}};
    if (yes == 0) {
        return {node_status::refused, confirm ? "no longer holds our value at the fencing round"
                                              : "held by another owner"};
    }
    return {node_status::error, describe_reply(event.answer)};
}

auto acquire_op::grant_answer_of(std::size_t node, const reply_event& event) const -> grant_answer {
    grant_answer answer{outcome_of(event, false)};
    discount_if_quarantined(node, answer.outcome);
    if (event.status != request_status::reply) return answer;
    if (wait_) {
        answer.holder_ttl = array_integer(event.answer, 2).value_or(-2);
        answer.queued = array_integer(event.answer, 0) == 0;  // a refusal enqueues us there
    }
    if (state_->kind == lock_kind::permit) {
        const auto second = array_integer(event.answer, 1);
        if (answer.outcome.status == node_status::ok && second) {
            answer.permit = static_cast<int>(*second);
        } else if (array_integer(event.answer, 0) == -1) {
            answer.permits_conflict = true;
            answer.outcome = {node_status::error,
                              "it knows this semaphore with " + std::to_string(second.value_or(0)) +
                                  " permits, not " + std::to_string(state_->permits)};
        }
        return answer;
    }
    if (scripted_) {
        if (const auto counter = array_integer(event.answer, 1); counter && *counter > 0)
            answer.counter = static_cast<std::uint64_t>(*counter);
    }
    return answer;
}

void acquire_op::discount_if_quarantined(std::size_t node, node_outcome& outcome) const {
    if (outcome.status != node_status::ok || ctx_.node(node).grants_count()) return;
    // It said yes, but it restarted without persisting every write and may have
    // forgotten a lock another client holds: its yes is not counted (the key it
    // set is released with the rest if the attempt fails).
    const auto left =
        std::chrono::ceil<milliseconds>(ctx_.node(node).quarantined_until() - steady_clock::now());
    outcome = {node_status::error,
               "restarted without persisting every write; its grants count again in " +
                   std::to_string(left.count()) + " ms"};
}

// ---- actions out -----------------------------------------------------------------------------

void acquire_op::perform(const acquire_actions& a) {
    if (a.cancel_retry_timer && timer_pending_ && ctx_.timers().cancel(retry_timer_))
        timer_pending_ = false;
    if (a.send_grants) send_grants();
    if (a.send_confirms) {
        const encoded_command confirm = confirm_command(false);
        for (std::size_t i = 0; i < ctx_.node_count(); ++i)
            send(i, confirm, make_tag(decision_.attempt(), confirm_sha_kind, i));
    }
    if (a.send_releases) send_releases();
    if (a.send_dequeues) send_dequeues();
    // The permit won, before the strays: their release names every other one.
    if (a.end == acquire_actions::ending::granted && state_->kind == lock_kind::permit)
        state_->slot = decision_.permit();
    if (a.send_stray_releases) {
        for (std::size_t i = 0; i < ctx_.node_count(); ++i) send_stray_release(i, false);
    }
    if (a.loss_grace) {
        retry_timer_ = after(*a.loss_grace, [this] { perform(decision_.on_loss_grace()); });
    }
    if (a.retry_after) {
        retry_timer_ = after(*a.retry_after, [this] { perform(decision_.on_retry_timer()); });
    }
    if (a.end == acquire_actions::ending::granted) finish_success(a.validity, a.decided_at);
    if (a.end == acquire_actions::ending::failed) finish_failure();
}

void acquire_op::send_grants() {
    // A fresh value for every attempt: a release of an earlier attempt that
    // arrives late (on a connection given up and recycled) must never delete
    // what this attempt is granted. It compares against the old value.
    state_->value = ctx_.rng().lock_value();
    // Semaphores: each attempt starts its scan at a random permit, so that
    // clients spread over the permits instead of all racing for the first.
    if (state_->kind == lock_kind::permit)
        first_permit_ =
            static_cast<int>(ctx_.rng().next() % static_cast<std::uint64_t>(state_->permits));
    ctx_.counters().attempts.fetch_add(1, std::memory_order_relaxed);
    // Registered before the first request: the script queues us on a node at
    // once, and a release there may notify us before this attempt has failed.
    if (wait_ && decision_.attempt() == 1) {
        if (can_be_successor()) {
            wait_->link = std::make_shared<handoff_link>(handoff_link{this});
            ctx_.waiters().add(wait_->waiter_id, this, this, std::string{keys_of(*state_).front()},
                               wait_->arrival, ticket_);
        } else {
            ctx_.waiters().add(wait_->waiter_id, this);
        }
    }
    const encoded_command grant = grant_command(false);
    for (std::size_t i = 0; i < ctx_.node_count(); ++i) {
        const std::uint32_t number =
            send(i, grant, make_tag(decision_.attempt(), grant_kind(false), i));
        if (i < grant_numbers_.size()) grant_numbers_[i] = number;
    }
}

void acquire_op::send_releases() {
    // Each form is encoded once, for every node it goes to.
    std::optional<encoded_command> by_sha;
    std::optional<encoded_command> by_eval;
    for (std::size_t i = 0; i < ctx_.node_count(); ++i) {
        const auto form = decision_.release_form_of(i);
        if (form == acquire_decision::release_form::none) continue;
        const bool eval = form == acquire_decision::release_form::by_eval;
        std::optional<encoded_command>& command = eval ? by_eval : by_sha;
        if (!command) command.emplace(release_call(*state_, eval, {}));
        send(i, *command,
             make_tag(decision_.attempt(), eval ? release_eval_kind : release_sha_kind, i));
    }
}

void acquire_op::send_release(std::size_t node, bool eval) {
    send(node, release_call(*state_, eval, {}),
         make_tag(decision_.attempt(), eval ? release_eval_kind : release_sha_kind, node));
}

void acquire_op::send_stray_release(std::size_t node, bool eval) {
    const auto form = decision_.stray_form_of(node);
    if (form == acquire_decision::release_form::none) return;
    eval = eval || form == acquire_decision::release_form::by_eval;
    send(node, release_call(*state_, eval, {}, permit_scope::all_but_held),
         make_tag(decision_.attempt(), eval ? stray_eval_kind : stray_sha_kind, node));
}

void acquire_op::send_dequeues() {
    ctx_.waiters().remove(wait_->waiter_id);
    const encoded_command dequeue =
        script_call(dequeue_script(), true, {queue_key(*state_).view()}, {wait_->waiter_id});
    for (std::size_t i = 0; i < ctx_.node_count(); ++i)
        send(i, dequeue, make_tag(decision_.attempt(), dequeue_kind, i));
}

// ---- results ---------------------------------------------------------------------------------

void acquire_op::finish_success(milliseconds validity, steady_clock::time_point decided_at) {
    state_->set_valid_until(decided_at + validity);
    if (decision_.settings().fencing) state_->fence = decision_.token();
    if (read_fence_) state_->fence = decision_.highest_counter();
    finished_ = true;
    if (limited_) ctx_.acquisition_finished();
    // The nodes yet to answer the grant: their replies change nothing now (the
    // release goes to every node), and waiting for them would keep this object
    // alive. With a thousand locks in flight, most decided acquisitions were
    // such stragglers' hostages (docs/benchmarks.md).
    if (ctx_.node_count() <= grant_numbers_.size()) {
        for (std::size_t i = 0; i < ctx_.node_count(); ++i) {
            if (decision_.nodes().status(i) == node_status::cancelled) disown(i, grant_numbers_[i]);
        }
    }
    decision_.drop_reports();  // only a failure is described; stragglers are ignored
    ctx_.counters().acquired.fetch_add(1, std::memory_order_relaxed);
    state_->count_held(ctx_.counters().locks_held);
    record_latency(acquire_outcome::ok, decided_at);
    if (wait_ && wait_->handoff_attempt == decision_.attempt())
        ctx_.counters().handoffs.fetch_add(1, std::memory_order_relaxed);
    if (state_->auto_renew) ctx_.watch(state_);
    // Still queued where the grant came late? The release takes us out there.
    if (wait_) {
        ctx_.waiters().remove(wait_->waiter_id);
        state_->waiter_id = wait_->waiter_id;
    }
    deliver(done_, lock_state::handle(state_));
}

void acquire_op::finish_failure() {
    if (finished_) return;
    finished_ = true;
    if (limited_) ctx_.acquisition_finished();
    if (wait_) ctx_.waiters().remove(wait_->waiter_id);
    ctx_.counters().acquire_failures.fetch_add(1, std::memory_order_relaxed);
    if (argument_error_) {
        record_latency(acquire_outcome::other);
        deliver(done_, result<lock>{failure{std::move(*argument_error_)}});
        return;
    }
    // Built now, not at the decision: stragglers have answered by now.
    const errc reason = decision_.failure_reason();
    record_latency(reason == errc::contended            ? acquire_outcome::contended
                   : reason == errc::quorum_unreachable ? acquire_outcome::unreachable
                                                        : acquire_outcome::other);
    std::string message = describe_failure(reason);
    if (const auto v = decision_.failure_validity())
        message += " (validity left: " + std::to_string(v->count()) + " ms)";
    deliver(done_, result<lock>{failure{error{make_error_code(reason), std::move(message),
                                              decision_.nodes().to_reports([this](std::size_t i) {
                                                  return ctx_.node(i).name();
                                              }),
                                              static_cast<int>(decision_.attempt())}}});
}

}  // namespace redlock::detail
