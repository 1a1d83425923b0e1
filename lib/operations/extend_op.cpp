#include "operations/extend_op.hpp"

#include "operations/acquire_checks.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/command.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/reply.hpp"
#include "sansio/scripts.hpp"

#include <utility>
#include <vector>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

extend_op::extend_op(op_context& ctx, std::shared_ptr<lock_state> state, milliseconds ttl,
                     client::extend_callback done)
    : operation{ctx},
      state_{std::move(state)},
      // The nodes keep the lock-delay on top; the validity counts from ttl.
      ttl_text_{std::to_string(ttl.count() + (state_ ? state_->delay.count() : 0))},
      done_{std::move(done)},
      decision_{ctx.node_count(),
                extend_settings{.ttl = ttl,
                                .drift_factor = ctx.config().clock_drift_factor,
                                .drift_floor = ctx.config().clock_drift_floor,
                                .node_extra = state_ ? state_->delay : milliseconds{0},
                                // A permit adopted by value: every permit key is named,
                                // and each node's yes counts for its own permit only.
                                .permits = state_ && state_->kind == lock_kind::permit &&
                                                   state_->slot < 0 && state_->permits > 1
                                               ? state_->permits
                                               : 0}} {
    if (state_ && !state_->resources.empty()) slot_ = resource_slot(state_->resources.front());
}

auto extend_op::now() noexcept -> steady_clock::time_point {
    return steady_clock::now();
}

auto extend_op::lock_view() const noexcept -> extend_lock_view {
    if (!state_ || state_->value.empty()) return {};
    return {.empty = false,
            .resource = state_->resources.front(),
            .released = state_->released.load(std::memory_order_acquire),
            .lost = state_->lost.load(std::memory_order_acquire),
            .adopted = state_->adopted,
            .valid_until = state_->valid_until()};
}

void extend_op::start() {
    ctx_.counters().extends.fetch_add(1, std::memory_order_relaxed);
    // An adopted lock's resource is the caller's word: one whose keys could
    // not share a hash tag was never acquired by this library.
    if (state_ && !state_->value.empty() && !state_->resources.empty()) {
        if (std::string problem = resource_problem(state_->resources.front()); !problem.empty()) {
            finished_ = true;
            after(milliseconds{0}, [this, problem = std::move(problem)]() mutable {
                deliver(done_,
                        result<milliseconds>{failure{error{
                            make_error_code(errc::invalid_argument), std::move(problem), {}, 0}}});
            });
            return;
        }
    }
    perform(decision_.start(lock_view(), now()));
}

void extend_op::handle(std::uint32_t tag, const reply_event& event) {
    if (tag_kind(tag) == repair_kind) return;  // best effort; never counted
    const script_form sent = tag_kind(tag) == eval_kind ? script_form::eval : script_form::evalsha;
    perform(decision_.on_reply(tag_node(tag), sent, event, lock_view(), now()));
}

void extend_op::perform(const extend_actions& a) {
    if (a.send_extends) {
        const encoded_command extend = extend_command(false);
        for (std::size_t i = 0; i < ctx_.node_count(); ++i)
            send(i, extend, make_tag(0, sha_kind, i), true);
    }
    if (a.resend_as_eval) send_extend(*a.resend_as_eval, true);
    if (a.repair_late) send_repair(*a.repair_late);
    switch (a.end) {
        case extend_actions::ending::none:
            break;
        case extend_actions::ending::refused:
            report_failure(a);
            break;
        case extend_actions::ending::extended:
            state_->adopted = false;  // from now on its validity is known
            state_->set_valid_until(a.deadline);
            finished_ = true;
            if (a.repair_missing) {
                // Only now, with the lock confirmed on a majority and valid: put
                // the key back where it went missing, with SET NX so that nothing
                // is overwritten. These answers never count toward any quorum.
                for (std::size_t i = 0; i < ctx_.node_count(); ++i) {
                    if (decision_.missing(i)) send_repair(i);
                }
            }
            ctx_.counters().latency.extend.record(a.took);
            deliver(done_, result<milliseconds>{a.remaining});
            break;
        case extend_actions::ending::failed:
            finished_ = true;
            ctx_.counters().latency.extend.record(a.took);  // sent: timed
            report_failure(a);
            break;
    }
}

void extend_op::report_failure(const extend_actions& a) {
    finished_ = true;
    error why = decision_.failure_error(a, [this](std::size_t i) { return ctx_.node(i).name(); });
    if (a.end == extend_actions::ending::failed) {
        deliver(done_, result<milliseconds>{failure{std::move(why)}});
        return;
    }
    // Refused before anything was sent: on a later loop turn, never inside start().
    after(milliseconds{0}, [this, why = std::move(why)]() mutable {
        deliver(done_, result<milliseconds>{failure{std::move(why)}});
    });
}

auto extend_op::extend_command(bool eval) const -> encoded_command {
    const std::string_view ttl = ttl_text_;
    if (state_->kind == lock_kind::permit) {
        std::vector<std::string> keys = permit_keys(ctx_.keys(), *state_, permit_scope::held);
        keys.insert(keys.begin(), permit_count_key(ctx_.keys(), *state_));
        const std::vector<std::string_view> views(keys.begin(), keys.end());
        const std::string permits = std::to_string(state_->permits);
        return script_call(permit_extend_script(), eval, views, {state_->value, ttl, permits});
    }
    const lock_keys keys = keys_of(ctx_.keys(), *state_);
    if (state_->kind == lock_kind::shared) {
        return script_call(shared_extend_script(), eval,
                           {keys.front(), readers_key(ctx_.keys(), *state_).view()},
                           {state_->value, ttl});
    }
    if (!state_->fence) return script_call(extend_script(), eval, keys.all(), {state_->value, ttl});
    // A fenced hold raises the fence counter where it still holds (scripts.cpp).
    std::vector<std::string_view> declared(keys.all().begin(), keys.all().end());
    const std::string fence = fence_key(ctx_.keys(), *state_);
    declared.push_back(fence);
    const std::string token = std::to_string(*state_->fence);
    return script_call(extend_script(), eval, declared, {state_->value, ttl, token});
}

void extend_op::send_extend(std::size_t node, bool eval) {
    send(node, extend_command(eval), make_tag(0, eval ? eval_kind : sha_kind, node), true);
}

void extend_op::send_repair(std::size_t node) {
    if (state_->kind == lock_kind::permit) {
        if (state_->slot < 0) return;  // adopted by value: which permit is not known
        const std::vector<std::string> keys = permit_keys(ctx_.keys(), *state_, permit_scope::held);
        send(node, {"SET", keys.front(), state_->value, "NX", "PX", ttl_text_},
             make_tag(0, repair_kind, node));
        return;
    }
    const lock_keys keys = keys_of(ctx_.keys(), *state_);
    if (state_->kind == lock_kind::shared) {
        // Re-admitted as a reader unless a writer holds it there now; the
        // writer-preference check is skipped (this reader held all along).
        send(node,
             script_call(
                 shared_acquire_script(), true,
                 {keys.front(), readers_key(ctx_.keys(), *state_).view(),
                  queue_key(ctx_.keys(), *state_).view(), live_key(ctx_.keys(), *state_).view()},
                 {state_->value, ttl_text_, "", "", "", "1"}),
             make_tag(0, repair_kind, node));
        return;
    }
    if (state_->resources.size() == 1) {
        send(node, {"SET", keys.front(), state_->value, "NX", "PX", ttl_text_},
             make_tag(0, repair_kind, node));
        return;
    }
    send(node, script_call(acquire_script(), true, keys.all(), {state_->value, ttl_text_, "0"}),
         make_tag(0, repair_kind, node));
}

void extend_op::cancel(errc) {
    // Let it finish: it is bounded by request_timeout, and its outcome (a new
    // deadline, or none) is what the holder needs to know.
}

}  // namespace redlock::detail
