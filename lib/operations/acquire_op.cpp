#include "operations/acquire_op.hpp"

#include "operations/lock_commands.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/command.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/reply.hpp"
#include "sansio/script_fallback.hpp"

#include <optional>
#include <string>
#include <utility>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

acquire_op::acquire_op(op_context& ctx, std::vector<std::string> resources, lock_options options,
                       client::acquire_callback done, client::acquire_ticket ticket,
                       std::shared_ptr<const std::string> proclamation)
    : operation{ctx},
      done_{std::move(done)},
      decision_{settings_of(ctx.config(), resources.size(), options)},
      ticket_{ticket},
      grant_numbers_{ctx.node_count()} {
    const acquire_settings& s = decision_.settings();
    state_ = lock_state_of(ctx.config(), std::move(resources), options, s, std::move(proclamation));
    if (state_ && !state_->resources.empty()) slot_ = resource_slot(state_->resources.front());
    shape_ = {.scripted =
                  s.fencing || state_->resources.size() > 1 || state_->kind != lock_kind::exclusive,
              .fencing = s.fencing,
              .read_fence = reads_fence(ctx.config(), options),
              .mode = s.mode};
    if (s.waiting) wait_ = std::make_unique<wait_fields>();
    if (s.offers) wait_->entry.offers = true;
    if (std::string problem = argument_problem(ctx.config(), s, *state_, options);
        !problem.empty()) {
        argument_error_ = std::make_unique<error>(
            error{make_error_code(errc::invalid_argument), std::move(problem), {}, 0});
    }
}

acquire_op::~acquire_op() {
    // A release may still forward answers of an attempt it granted: it finds nobody.
    if (wait_ && wait_->link) wait_->link->target = nullptr;
}

auto acquire_op::read_input() -> acquire_input {
    return {.now = steady_clock::now(),
            .random = ctx_.rng().next(),
            .subscribed = wait_ && ctx_.waiters().subscribed(),
            .subscriptions = wait_ ? ctx_.waiters().subscriptions() : 0,
            .settling = this};
}

auto acquire_op::commands() const noexcept -> grant_commands {
    return grant_commands{ctx_.keys(), *state_, shape_, wait_ ? &wait_->entry : nullptr};
}

// ---- events in -------------------------------------------------------------------------------

void acquire_op::start() {
    const acquire_input in = read_input();
    started_ = in.now;
    if (argument_error_) {
        retry_timer_ = after(milliseconds{0}, [this] { finish_failure(read_input().now); });
        return;
    }
    if (wait_) {
        wait_->entry.waiter_id = ctx_.client_id() + ":" + std::to_string(ticket_);
        // Queue position: the wall clock only orders waiters (it decides nothing
        // about safety), and it is the same on every node.
        wait_->arrival =
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count());
        wait_->entry.arrival_text = std::to_string(wait_->arrival);
        wait_->entry.liveness_text = std::to_string(ctx_.config().lock.waiter_ttl.count());
    }
    perform(decision_.start(in), in.now);
}

void acquire_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t node = tag_node(tag);
    const auto k = static_cast<kind>(tag_kind(tag));
    if (resend_as_eval(tag, event)) return;
    // Best effort: the permit's own TTL bounds what a lost one costs.
    if (k == stray_sha_kind || k == stray_eval_kind) return;
    if (k == release_sha_kind || k == release_eval_kind || k == dequeue_kind) {
        perform(decision_.on_cleanup_answered(), read_input().now);
        return;
    }
    if (tag_attempt(tag) != decision_.attempt()) return;  // an earlier attempt: released since

    const grant_commands cmds = commands();
    if (k == confirm_sha_kind || k == confirm_eval_kind) {
        node_outcome outcome = grant_commands::confirm_outcome(event);
        if (!decision_.open_for_confirms()) {
            decision_.on_straggler(node, std::move(outcome));
            return;
        }
        const acquire_input in = read_input();
        discount_quarantined(ctx_.node(node), slot_, outcome, in.now);
        perform(decision_.on_confirm(node, std::move(outcome), in), in.now);
        return;
    }
    if (!decision_.open_for_grants()) {
        // As an open grant is read: grant_outcome cannot name "another permit count".
        decision_.on_straggler(node, cmds.grant_answer_of(event).outcome);
        return;
    }
    if (const auto held = cmds.held_resource(event)) held_.note(*held);
    grant_answer answer = cmds.grant_answer_of(event);
    const acquire_input in = read_input();
    discount_quarantined(ctx_.node(node), slot_, answer.outcome, in.now);
    perform(decision_.on_grant(node, std::move(answer), in), in.now);
}

auto acquire_op::resend_as_eval(std::uint32_t tag, const reply_event& event) -> bool {
    // The one NOSCRIPT rule (sansio/script_fallback.hpp), which extend_op and
    // release_op ask too, says whether to resend; this says what to resend. A release's or a stray
    // release's replacement is the same clean-up to the decision; a grant or confirm is asked again
    // only while its attempt's question is open. A dequeue goes as EVAL already, and a plain SET
    // has no script.
    const auto k = static_cast<kind>(tag_kind(tag));
    const bool sent_as_sha = k == script_sha_kind || k == confirm_sha_kind ||
                             k == release_sha_kind || k == stray_sha_kind;
    if (after_script_reply(script_form_of(!sent_as_sha), event) != script_reply::resend_as_eval)
        return false;
    const std::size_t node = tag_node(tag);
    const bool current = tag_attempt(tag) == decision_.attempt();
    switch (k) {
        case script_sha_kind:
            if (!current || !decision_.open_for_grants()) return false;
            send_grant_by_eval(node);
            return true;
        case confirm_sha_kind:
            if (!current || !decision_.open_for_confirms()) return false;
            send_confirm(node, true);
            return true;
        case release_sha_kind:
            send_release(node, true);
            return true;
        case stray_sha_kind:
            send_stray_release(node, true);
            return true;
        default:
            return false;
    }
}

void acquire_op::wake() {
    if (finished_) return;
    const acquire_input in = read_input();
    perform(decision_.on_wake(in), in.now);
}

void acquire_op::cancel(errc why) {
    if (finished_) return;
    if (wait_) ctx_.waiters().remove(wait_->entry.waiter_id);
    // An argument error keeps its delivery turn. Otherwise what was granted is
    // released; with nothing to undo (between attempts) the decision ends at
    // once, and that failure too is delivered on a later turn: cancel() may be
    // called on the loop thread, and no callback runs inside the call.
    if (!argument_error_) {
        acquire_actions a = decision_.on_cancel(why);
        const bool ended = a.end == acquire_actions::ending::failed;
        a.end = acquire_actions::ending::none;
        perform(a, {});  // no end left to time
        if (ended)
            retry_timer_ = after(milliseconds{0}, [this] { finish_failure(read_input().now); });
    }
    maybe_retire();
}

auto acquire_op::can_be_successor() const noexcept -> bool {
    return wait_ && state_->kind == lock_kind::exclusive && state_->resources.size() == 1 &&
           state_->wake == '1' && !decision_.settings().fencing;
}

auto acquire_op::begin_handoff() -> std::optional<handoff_offer> {
    if (finished_ || !wait_ || !wait_->link || !decision_.can_take_handoff()) return std::nullopt;
    const acquire_input in = read_input();
    const acquire_actions a = decision_.begin_handoff(in);
    // A fresh value, as for every attempt (send_grants says why).
    ctx_.rng().write_token(state_->value);
    ctx_.counters().attempts.fetch_add(1, std::memory_order_relaxed);
    wait_->handoff_attempt = decision_.attempt();
    perform(a, in.now);  // stops the retry timer: the release is our attempt now
    return handoff_offer{state_->value, std::to_string(state_->node_ttl().count()),
                         wait_->entry.waiter_id, decision_.attempt(), wait_->link};
}

void acquire_op::on_handoff_reply(std::uint32_t attempt, std::size_t node,
                                  const reply_event& event) {
    if (finished_) return;                       // decided: late answers change nothing
    if (attempt != decision_.attempt()) return;  // a later attempt of ours: released since
    const acquire_input in = read_input();
    grant_answer answer = grant_commands::handoff_answer_of(event);
    discount_quarantined(ctx_.node(node), slot_, answer.outcome, in.now);
    if (decision_.open_for_grants()) {
        perform(decision_.on_grant(node, std::move(answer), in), in.now);
    } else {
        decision_.on_straggler(node, std::move(answer.outcome));
    }
    maybe_retire();
}

void acquire_op::on_handed(std::size_t node, std::uint32_t attempt) {
    if (finished_) return;
    const acquire_input in = read_input();
    node_outcome yes{node_status::ok, {}};
    discount_quarantined(ctx_.node(node), slot_, yes, in.now);  // not counted: a wake-up
    perform(yes.status == node_status::ok ? decision_.on_handed(node, attempt, in)
                                          : decision_.on_wake(in),
            in.now);
    maybe_retire();  // not a reply: nothing else retires a finished acquisition
}

// ---- actions out -----------------------------------------------------------------------------

void acquire_op::perform(const acquire_actions& a, steady_clock::time_point now) {
    if (a.cancel_retry_timer && timer_pending_ && ctx_.timers().cancel(retry_timer_))
        timer_pending_ = false;
    if (a.send_grants) send_grants();
    if (a.send_confirms) {
        const encoded_command confirm = commands().confirm(decision_.token(), false);
        for (std::size_t i = 0; i < ctx_.node_count(); ++i)
            send(i, confirm, make_tag(decision_.attempt(), confirm_sha_kind, i), true);
    }
    if (a.send_releases) send_releases();
    if (a.send_dequeues) send_dequeues();
    // The permit won, before the strays: their release names every other one.
    if (a.end == acquire_actions::ending::granted && state_->kind == lock_kind::permit)
        state_->slot = decision_.permit();
    if (a.send_stray_releases) {
        for (std::size_t i = 0; i < ctx_.node_count(); ++i) send_stray_release(i, false);
    }
    if (a.loss_grace) arm(*a.loss_grace + milliseconds{1}, &acquire_decision::on_loss_grace);
    if (a.settle_grace) arm(*a.settle_grace, &acquire_decision::on_settle_grace);
    if (a.retry_after) arm(*a.retry_after, &acquire_decision::on_retry_timer);
    if (a.end == acquire_actions::ending::granted) finish_success(a.validity, a.decided_at);
    if (a.end == acquire_actions::ending::failed) finish_failure(now);
}

void acquire_op::arm(milliseconds delay,
                     acquire_actions (acquire_decision::*event)(const acquire_input&)) {
    retry_timer_ = after(delay, [this, event] {
        const acquire_input in = read_input();
        perform((decision_.*event)(in), in.now);
    });
}

void acquire_op::send_grants() {
    // A fresh value for every attempt: a release of an earlier attempt that
    // arrives late (on a connection given up and recycled) must never delete
    // what this attempt is granted. It compares against the old value. (The
    // holder text after the token stays: lock_state_of put it there.)
    ctx_.rng().write_token(state_->value);
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
            ctx_.waiters().add(wait_->entry.waiter_id, this,
                               std::string{keys_of(ctx_.keys(), *state_).front()}, wait_->arrival,
                               ticket_);
        } else {
            ctx_.waiters().add(wait_->entry.waiter_id, this);
        }
        ctx_.waiters().watch_shard(wait_->entry.waiter_id, shard_wake_channel(ctx_.keys(), *state_),
                                   slot_);
    }
    if (wait_) wait_->entry.number(decision_.attempt());
    const grant_commands cmds = commands();
    const encoded_command grant = cmds.grant(false, first_permit_);
    const kind k = cmds.plain_set() ? set_kind : script_sha_kind;
    for (std::size_t i = 0; i < ctx_.node_count(); ++i)
        grant_numbers_.set(i, send(i, grant, make_tag(decision_.attempt(), k, i), true));
}

void acquire_op::send_grant_by_eval(std::size_t node) {
    grant_numbers_.set(node, send(node, commands().grant(true, first_permit_),
                                  make_tag(decision_.attempt(), script_eval_kind, node), true));
}

void acquire_op::send_confirm(std::size_t node, bool eval) {
    send(node, commands().confirm(decision_.token(), eval),
         make_tag(decision_.attempt(), eval ? confirm_eval_kind : confirm_sha_kind, node), true);
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
        if (!command) command.emplace(release_call(ctx_.keys(), *state_, eval, {}));
        send(i, *command,
             make_tag(decision_.attempt(), eval ? release_eval_kind : release_sha_kind, i));
    }
}

void acquire_op::send_release(std::size_t node, bool eval) {
    send(node, release_call(ctx_.keys(), *state_, eval, {}),
         make_tag(decision_.attempt(), eval ? release_eval_kind : release_sha_kind, node));
}

void acquire_op::send_stray_release(std::size_t node, bool eval) {
    const auto form = decision_.stray_form_of(node);
    if (form == acquire_decision::release_form::none) return;
    eval = eval || form == acquire_decision::release_form::by_eval;
    send(node, release_call(ctx_.keys(), *state_, eval, {}, permit_scope::all_but_held),
         make_tag(decision_.attempt(), eval ? stray_eval_kind : stray_sha_kind, node));
}

void acquire_op::send_dequeues() {
    ctx_.waiters().remove(wait_->entry.waiter_id);
    const encoded_command dequeue = commands().dequeue();
    for (std::size_t i = 0; i < ctx_.node_count(); ++i)
        send(i, dequeue, make_tag(decision_.attempt(), dequeue_kind, i));
}

// ---- results ---------------------------------------------------------------------------------

void acquire_op::finish_success(milliseconds validity, steady_clock::time_point decided_at) {
    state_->set_valid_until(decided_at + validity);
    if (shape_.fencing) state_->fence = decision_.token();
    if (shape_.read_fence) state_->fence = decision_.highest_counter();
    finished_ = true;
    if (limited_) ctx_.acquisition_finished();
    // The nodes yet to answer the grant: their replies change nothing now (the release goes
    // to every node), and waiting for them would keep this object alive. With a thousand locks
    // in flight, most decided acquisitions were such stragglers' hostages (docs/benchmarks.md).
    for (std::size_t i = 0; i < ctx_.node_count(); ++i) {
        if (decision_.nodes().status(i) == node_status::cancelled) disown(i, grant_numbers_[i]);
    }
    note_missed_grants(ctx_, decision_.nodes());
    decision_.drop_reports();  // only a failure is described; stragglers are ignored
    ctx_.counters().acquired.fetch_add(1, std::memory_order_relaxed);
    state_->count_held(ctx_.counters().locks_held);
    record_latency(acquire_outcome::ok, decided_at);
    if (wait_ && (wait_->handoff_attempt == decision_.attempt() || decision_.handed_count() > 0))
        ctx_.counters().handoffs.fetch_add(1, std::memory_order_relaxed);
    if (state_->auto_renew) ctx_.watch(state_);
    // Still queued where the grant came late? The release takes us out there.
    if (wait_) {
        ctx_.waiters().remove(wait_->entry.waiter_id);
        state_->waiter_id = wait_->entry.waiter_id;
    }
    deliver(done_, lock_state::handle(state_));
}

void acquire_op::finish_failure(steady_clock::time_point now) {
    if (finished_) return;
    finished_ = true;
    if (wait_) ctx_.waiters().remove(wait_->entry.waiter_id);
    ctx_.counters().acquire_failures.fetch_add(1, std::memory_order_relaxed);
    if (argument_error_) {
        if (limited_) ctx_.acquisition_finished();
        record_latency(acquire_outcome::other, now);
        deliver(done_, result<lock>{failure{std::move(*argument_error_)}});
        return;
    }
    // Built now, not at the decision: stragglers have answered by now.
    const errc reason = decision_.failure_reason();
    record_latency(outcome_of(reason), now);
    error failed = failure_error(*state_, decision_, held_, reason,
                                 [this](std::size_t i) { return ctx_.node(i).name(); });
    if (names_holder(*state_, reason) && done_) {
        // Who holds it, asked of the nodes before the error is delivered.
        ctx_.name_holder(state_->resources.front(), std::move(failed), std::exchange(done_, {}),
                         limited_);
        return;
    }
    if (limited_) ctx_.acquisition_finished();
    deliver(done_, result<lock>{failure{std::move(failed)}});
}

void acquire_op::record_latency(acquire_outcome outcome, steady_clock::time_point end) noexcept {
    if (started_ == steady_clock::time_point{}) return;  // never started: nothing to time
    const auto took = end - started_;
    auto& latency = ctx_.counters().latency;
    latency.acquire[static_cast<std::size_t>(outcome)].record(took);
    // Refused at its first attempt: it waited (or polled) for the holder.
    if (decision_.attempt() > 1) latency.wait.record(took);
}

}  // namespace redlock::detail
