#include "operations/release_op.hpp"

#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/scripts.hpp"
#include "sansio/timing.hpp"

#include <algorithm>
#include <atomic>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::detail {

release_op::release_op(op_context& ctx, std::shared_ptr<lock_state> state,
                       client::release_callback done)
    : operation{ctx},
      state_{std::move(state)},
      done_{std::move(done)},
      decision_{ctx.node_count()} {}

void release_op::start() {
    const std::size_t n = ctx_.node_count();
    outcomes_.reset(n, node_status::pending);  // what a node is until it answers
    started_ms_ = ctx_.timers().now();
    if (!state_ || state_->value.empty()) {
        finished_ = true;
        after(std::chrono::milliseconds{0}, [this] {
            deliver(done_,
                    result<release_report>{failure{error{make_error_code(errc::invalid_argument),
                                                         "release of an empty lock handle",
                                                         {},
                                                         0}}});
        });
        return;
    }
    started_ = std::chrono::steady_clock::now();
    state_->uncount_held();  // no longer ours to count, whatever the nodes answer
    successor_ = find_successor();
    const encoded_command release = release_command(false);
    for (std::size_t i = 0; i < n; ++i) send(i, release, make_tag(0, sha_kind, i));
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
    if (tag_kind(tag) == sha_kind && event.status == request_status::reply &&
        is_noscript(event.answer)) {
        send_release(node, true);  // restarted or flushed node: EVAL loads the script again
        return;
    }
    // The successor hears every answer, before anything here can retire us.
    if (successor_ && successor_->link->target != nullptr)
        successor_->link->target->on_handoff_reply(successor_->attempt, node, event);
    node_outcome r;
    bool deleted = false;
    switch (event.status) {
        case request_status::reply:
            if (integer_of(event.answer).value_or(0) > 0) {
                r.status = node_status::ok;
                deleted = true;
            } else if (is_integer(event.answer, 0)) {
                r.status = node_status::refused;
                r.detail = "not held with this value (expired, or taken over)";
            } else {
                r = failed_outcome(event);
            }
            break;
        case request_status::timeout:
        case request_status::unreachable:
        case request_status::stopped:
            r = failed_outcome(event);
            break;
    }
    if (finished_) {
        // Decided without this node: its outcome goes to the statistics only.
        auto& late =
            deleted ? ctx_.counters().release_late_deleted : ctx_.counters().release_late_failed;
        late.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    outcomes_.set(node, std::move(r));
    switch (decision_.on_answer(deleted)) {
        case release_decision::step::finish:
            finish();
            break;
        case release_decision::step::start_grace: {
            const auto took = static_cast<std::int64_t>(ctx_.timers().now() - started_ms_);
            grace_ = after(release_decision::grace(std::chrono::milliseconds{took}), [this] {
                grace_.reset();
                if (!finished_) finish();
            });
            break;
        }
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
    report.nodes = outcomes_.to_reports([this](std::size_t i) { return ctx_.node(i).name(); });
    ctx_.counters().latency.release.record(std::chrono::steady_clock::now() - started_);
    deliver(done_, result<release_report>{std::move(report)});
}

void release_op::cancel(errc) {
    // A release in flight is let finish: it is bounded by request_timeout, and
    // dropping it would leave keys behind until their TTL.
}

}  // namespace redlock::detail
