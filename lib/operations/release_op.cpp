#include "operations/release_op.hpp"

#include "operations/acquire_checks.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/command.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/reply.hpp"

#include <atomic>
#include <utility>

namespace redlock::detail {

release_op::release_op(op_context& ctx, std::shared_ptr<lock_state> state,
                       client::release_callback done)
    : operation{ctx},
      state_{std::move(state)},
      done_{std::move(done)},
      decision_{ctx.node_count()} {
    if (state_ && !state_->resources.empty()) slot_ = resource_slot(state_->resources.front());
}

auto release_op::now() noexcept -> std::chrono::steady_clock::time_point {
    return std::chrono::steady_clock::now();
}

void release_op::start() {
    // An adopted lock's resource is the caller's word: one whose keys could
    // not share a hash tag was never acquired by this library.
    std::string problem = !state_ || state_->value.empty() || state_->resources.empty()
                              ? "release of an empty lock handle"
                              : resource_problem(state_->resources.front());
    if (!problem.empty()) {
        finished_ = true;
        after(std::chrono::milliseconds{0}, [this, problem = std::move(problem)]() mutable {
            deliver(done_,
                    result<release_report>{failure{error{
                        make_error_code(errc::invalid_argument), std::move(problem), {}, 0}}});
        });
        return;
    }
    decision_.start(now());
    state_->uncount_held();  // no longer ours to count, whatever the nodes answer
    successor_ = find_successor();
    const encoded_command release = release_command(false);
    for (std::size_t i = 0; i < ctx_.node_count(); ++i) send(i, release, make_tag(0, sha_kind, i));
}

auto release_op::find_successor() -> std::optional<handoff_offer> {
    // The releaser's own kind and wake-up mode decide whether its script may
    // pass the key on: an exclusive lock on one resource that wakes one waiter.
    if (!ctx_.waiters().has_successors() || state_->kind != lock_kind::exclusive ||
        state_->resources.size() != 1 || state_->wake != '1')
        return std::nullopt;
    waiter* first = ctx_.waiters().first_successor(keys_of(ctx_.keys(), *state_).front());
    if (first == nullptr) return std::nullopt;
    return first->begin_handoff();
}

auto release_op::release_command(bool eval) const -> encoded_command {
    return release_call(ctx_.keys(), *state_, eval, state_->waiter_id, permit_scope::held,
                        successor_ ? &*successor_ : nullptr);
}

void release_op::send_release(std::size_t node, bool eval) {
    send(node, release_command(eval), make_tag(0, eval ? eval_kind : sha_kind, node));
}

void release_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t node = tag_node(tag);
    const script_form sent = tag_kind(tag) == eval_kind ? script_form::eval : script_form::evalsha;
    const release_decision::reply_actions a = decision_.on_reply(node, sent, event);
    if (a.resend_as_eval) {
        send_release(node, true);
        return;
    }
    // The successor hears every answer, before anything here can retire us.
    if (successor_ && successor_->link->target != nullptr)
        successor_->link->target->on_handoff_reply(successor_->attempt, node, event);
    switch (a.after_report) {
        case release_decision::late::deleted:
            ctx_.counters().release_late_deleted.fetch_add(1, std::memory_order_relaxed);
            return;
        case release_decision::late::failed:
            ctx_.counters().release_late_failed.fetch_add(1, std::memory_order_relaxed);
            return;
        case release_decision::late::no:
            break;
    }
    perform(a.next);
}

void release_op::perform(release_decision::step next) {
    switch (next) {
        case release_decision::step::finish:
            finish();
            break;
        case release_decision::step::start_grace:
            grace_ = after(decision_.grace_timeout(now()), [this] {
                grace_.reset();
                perform(decision_.on_grace_timer());
            });
            break;
        case release_decision::step::wait:
            break;
    }
}

void release_op::finish() {
    finished_ = true;
    if (grace_ && ctx_.timers().cancel(*grace_)) timer_pending_ = false;
    grace_.reset();
    release_report report;
    report.deleted = decision_.deleted();
    report.quorum = decision_.needed();
    report.pending = decision_.pending();
    report.nodes =
        decision_.nodes().to_reports([this](std::size_t i) { return ctx_.node(i).name(); });
    ctx_.counters().latency.release.record(decision_.took(now()));
    deliver(done_, result<release_report>{std::move(report)});
}

void release_op::cancel(errc) {
    // A release in flight is let finish: it is bounded by request_timeout, and
    // dropping it would leave keys behind until their TTL.
}

}  // namespace redlock::detail
