// The successor's side of a hand-off: a release of the same lock by this
// client runs a script that grants us where we are first in line. That script
// is the grant of an attempt we begin when the release asks (begin_handoff)
// and decide like any other from the answers it forwards: a majority, with the
// validity counted from before the release was sent, or a clean-up and our
// usual wait. Nothing here is a new rule of safety: the script's SET is a grant
// of our value on one node, as our own SET NX would be.
#include "operations/acquire_op.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"

namespace redlock::detail {

acquire_op::~acquire_op() {
    // A release may still forward answers of an attempt it granted: it finds nobody.
    if (wait_ && wait_->link) wait_->link->target = nullptr;
}

auto acquire_op::can_be_successor() const noexcept -> bool {
    return wait_ && state_->kind == lock_kind::exclusive && state_->resources.size() == 1 &&
           state_->wake == '1' && !decision_.settings().fencing;
}

auto acquire_op::begin_handoff() -> std::optional<handoff_offer> {
    if (finished_ || !wait_ || !wait_->link || !decision_.can_take_handoff()) return std::nullopt;
    const acquire_actions a = decision_.begin_handoff();
    // A fresh value, as for every attempt (send_grants says why).
    state_->value = ctx_.rng().lock_value();
    ctx_.counters().attempts.fetch_add(1, std::memory_order_relaxed);
    wait_->handoff_attempt = decision_.attempt();
    perform(a);  // stops the retry timer: the release is our attempt now
    return handoff_offer{state_->value, std::to_string(decision_.settings().ttl.count()),
                         wait_->waiter_id, decision_.attempt(), wait_->link};
}

auto acquire_op::handoff_answer_of(std::size_t node, const reply_event& event) const
    -> grant_answer {
    grant_answer answer;
    if (event.status != request_status::reply || is_error(event.answer)) {
        answer.outcome = failed_outcome(event);
        return answer;
    }
    const long long said = integer_of(event.answer).value_or(-1);
    if (said == 2) {
        answer.outcome = {node_status::ok, {}};
        discount_if_quarantined(node, answer.outcome);
    } else if (said == 1 || said == 0) {
        // Released to whoever is first in line there (or not held there by the
        // releaser any more): we are still queued, and the key may be free.
        answer.outcome = {node_status::refused, "handed to a waiter ahead of us"};
        answer.queued = true;
    } else {
        answer.outcome = {node_status::error, describe_reply(event.answer)};
    }
    return answer;
}

void acquire_op::on_handoff_reply(std::uint32_t attempt, std::size_t node,
                                  const reply_event& event) {
    if (finished_) return;                       // decided: late answers change nothing
    if (attempt != decision_.attempt()) return;  // a later attempt of ours: released since
    if (decision_.open_for_grants()) {
        perform(decision_.on_grant(node, handoff_answer_of(node, event)));
    } else {
        decision_.on_straggler(node, handoff_answer_of(node, event).outcome);
    }
    maybe_retire();
}

}  // namespace redlock::detail
