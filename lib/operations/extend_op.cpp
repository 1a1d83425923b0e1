#include "operations/extend_op.hpp"

#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/scripts.hpp"
#include "sansio/timing.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

extend_op::extend_op(op_context& ctx, std::shared_ptr<lock_state> state, milliseconds ttl,
                     client::extend_callback done)
    : operation{ctx},
      state_{std::move(state)},
      ttl_{ttl},
      ttl_text_{std::to_string(ttl.count())},
      done_{std::move(done)},
      decision_{ctx.node_count()} {}

void extend_op::start() {
    ctx_.counters().extends.fetch_add(1, std::memory_order_relaxed);
    if (!state_ || state_->value.empty()) {
        fail_later(errc::invalid_argument, "extend of an empty lock handle");
        return;
    }
    if (ttl_ <= milliseconds{0}) {
        fail_later(errc::invalid_argument, "ttl must be greater than 0 ms");
        return;
    }
    if (ttl_ > max_ttl) {
        fail_later(errc::invalid_argument, "ttl must be at most 2147483647 ms");
        return;
    }
    // Extending a lock whose validity has ended would be acquiring it afresh
    // without the checks of an acquisition: refuse.
    const char* gone = nullptr;
    if (state_->released.load(std::memory_order_acquire))
        gone = "it was released";
    else if (state_->lost.load(std::memory_order_acquire))
        gone = "it was lost";
    else if (!state_->adopted && steady_clock::now() >= state_->valid_until())
        gone = "its validity had already ended";
    if (gone != nullptr) {
        fail_later(errc::not_held, "cannot extend '" + state_->resources.front() + "': " + gone);
        return;
    }
    const std::size_t n = ctx_.node_count();
    reports_.reset(n);
    start_ = steady_clock::now();
    const encoded_command extend = extend_command(false);
    for (std::size_t i = 0; i < n; ++i) send(i, extend, make_tag(0, sha_kind, i));
}

auto extend_op::extend_command(bool eval) const -> encoded_command {
    if (state_->kind == lock_kind::permit) {
        std::vector<std::string> keys = permit_keys(ctx_.keys(), *state_, permit_scope::held);
        keys.insert(keys.begin(), permit_count_key(ctx_.keys(), *state_));
        const std::vector<std::string_view> views(keys.begin(), keys.end());
        const std::string permits = std::to_string(state_->permits);
        return script_call(permit_extend_script(), eval, views,
                           {state_->value, ttl_text_, permits});
    }
    const lock_keys keys = keys_of(ctx_.keys(), *state_);
    if (state_->kind == lock_kind::shared)
        return script_call(shared_extend_script(), eval, keys.all(), {state_->value, ttl_text_});
    return script_call(extend_script(), eval, keys.all(), {state_->value, ttl_text_});
}

void extend_op::send_extend(std::size_t node, bool eval) {
    send(node, extend_command(eval), make_tag(0, eval ? eval_kind : sha_kind, node));
}

void extend_op::fail_later(errc code, std::string message) {
    finished_ = true;
    after(milliseconds{0}, [this, code, message = std::move(message)]() mutable {
        deliver(done_, result<milliseconds>{
                           failure{error{make_error_code(code), std::move(message), {}, 0}}});
    });
}

auto extend_op::answer_of(const reply_event& event) -> extend_answer {
    const std::optional<long long> answer =
        event.status == request_status::reply ? integer_of(event.answer) : std::nullopt;
    if (answer && *answer >= 1) return extend_answer::extended;  // the TTL left there
    if (answer == 0) return extend_answer::other_value;
    if (answer == -1) return extend_answer::missing;
    return extend_answer::failed;
}

void extend_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t node = tag_node(tag);
    if (tag_kind(tag) == repair_kind) return;  // best effort; never counted
    const extend_answer answer = answer_of(event);
    if (!decision_.open()) {
        // A straggler that lost the key, after a successful extend: repair it too.
        if (decision_.repairs_late(answer) && lock_state::handle(state_).valid()) send_repair(node);
        return;
    }
    if (tag_kind(tag) == sha_kind && event.status == request_status::reply &&
        is_noscript(event.answer)) {
        send_extend(node, true);  // restarted or flushed node: EVAL loads the script again
        return;
    }
    switch (answer) {
        case extend_answer::extended:
            reports_.set(node, {node_status::ok, {}});
            // The scripts never shorten a TTL: a node may report more than ttl_.
            if (const auto left = integer_of(event.answer)) {
                const milliseconds ms{*left};
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
    decide(decision_.on_answer(node, answer));
}

void extend_op::decide(quorum_tally::verdict verdict) {
    if (verdict == quorum_tally::verdict::pending) return;
    if (verdict == quorum_tally::verdict::lost) {
        fail(decision_.failure(), decision_.failure() == errc::not_held
                                      ? "a majority of nodes no longer hold it"
                                      : "fewer than a majority of nodes confirmed in time");
        return;
    }
    const auto now = steady_clock::now();
    const auto outcome =
        extend_decision::new_deadline({.adopted = state_->adopted,
                                       .old_deadline = state_->valid_until(),
                                       .started = start_,
                                       .now = now,
                                       .ttl = ttl_,
                                       .confirmed_left = confirmed_left_,
                                       .drift_factor = ctx_.config().clock_drift_factor,
                                       .drift_floor = ctx_.config().clock_drift_floor});
    if (!outcome.deadline) {
        fail(errc::not_held, outcome.why);
        return;
    }
    state_->adopted = false;  // from now on its validity is known
    state_->set_valid_until(*outcome.deadline);
    finished_ = true;
    decision_.mark_extended();
    repair_missing();
    ctx_.counters().latency.extend.record(now - start_);
    deliver(done_, result<milliseconds>{std::chrono::floor<milliseconds>(*outcome.deadline - now)});
}

void extend_op::repair_missing() {
    // Only now, with the lock confirmed on a majority and valid: put the key
    // back where it went missing, with SET NX so that nothing is overwritten.
    // These answers never count toward any quorum.
    for (std::size_t i = 0; i < ctx_.node_count(); ++i) {
        if (decision_.missing(i)) send_repair(i);
    }
}

void extend_op::send_repair(std::size_t node) {
    if (state_->kind == lock_kind::permit) {
        if (state_->slot < 0) return;  // adopted by value: which permit is not known
        const std::vector<std::string> keys =
            permit_keys(ctx_.keys(), *state_, permit_scope::held);
        send(node, {"SET", keys.front(), state_->value, "NX", "PX", ttl_text_},
             make_tag(0, repair_kind, node));
        return;
    }
    const lock_keys keys = keys_of(ctx_.keys(), *state_);
    if (state_->kind == lock_kind::shared) {
        // Re-admitted as a reader unless a writer holds it there now; the
        // writer-preference check is skipped (this reader held all along).
        send(node,
             script_call(shared_acquire_script(), true,
                         {keys.front(), "", queue_key(ctx_.keys(), *state_).view()},
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

void extend_op::fail(errc code, std::string why) {
    finished_ = true;
    ctx_.counters().latency.extend.record(steady_clock::now() - start_);  // sent: timed
    std::string message = "cannot extend '" + state_->resources.front() + "': " + why +
                          "; it stays valid until its previous deadline" + describe_nodes();
    deliver(done_,
            result<milliseconds>{failure{error{
                make_error_code(code), std::move(message),
                reports_.to_reports([this](std::size_t i) { return ctx_.node(i).name(); }), 0}}});
}

auto extend_op::describe_nodes() const -> std::string {
    const quorum_tally& tally = decision_.tally();
    std::string text = " (" + std::to_string(tally.yes_count()) + " of " +
                       std::to_string(ctx_.node_count()) + " confirmed, " +
                       std::to_string(tally.needed()) + " needed";
    reports_.append_problems(text, [this](std::size_t i) { return ctx_.node(i).name(); });
    return text + ")";
}

void extend_op::cancel(errc) {
    // Let it finish: it is bounded by request_timeout, and its outcome (a new
    // deadline, or none) is what the holder needs to know.
}

}  // namespace redlock::detail
