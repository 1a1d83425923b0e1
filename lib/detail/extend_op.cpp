#include "detail/extend_op.hpp"

#include "detail/command.hpp"
#include "detail/lock_state.hpp"
#include "detail/op_context.hpp"
#include "detail/scripts.hpp"
#include "detail/timing.hpp"

#include <algorithm>
#include <utility>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

extend_op::extend_op(op_context& ctx, std::shared_ptr<lock_state> state, milliseconds ttl,
                     client::extend_callback done)
    : operation{ctx},
      state_{std::move(state)},
      ttl_{ttl},
      ttl_text_{std::to_string(ttl.count())},
      done_{std::move(done)} {}

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
    tally_ = quorum_tally{n};
    for (std::size_t i = 0; i < n; ++i) {
        reports_.reset(n);
    }
    open_ = true;
    missing_.assign(n, false);
    start_ = steady_clock::now();
    const encoded_command extend = extend_command(false);
    for (std::size_t i = 0; i < n; ++i) send(i, extend, make_tag(0, sha_kind, i));
}

auto extend_op::extend_command(bool eval) const -> encoded_command {
    const lock_keys keys = keys_of(*state_);
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

void extend_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t node = tag_node(tag);
    if (tag_kind(tag) == repair_kind) return;  // best effort; never counted
    if (!open_) {
        // A straggler that lost the key, after a successful extend: repair it too.
        if (extended_ && event.status == request_status::reply && integer_of(event.reply) == -1 &&
            lock_state::handle(state_).valid()) {
            send_repair(node);
        }
        return;
    }
    if (tag_kind(tag) == sha_kind && event.status == request_status::reply &&
        is_noscript(event.reply)) {
        send_extend(node, true);  // restarted or flushed node: EVAL loads the script again
        return;
    }
    const std::optional<long long> answer =
        event.status == request_status::reply ? integer_of(event.reply) : std::nullopt;
    if (answer == 1) {
        reports_.set(node, {node_status::ok, {}});
    } else if (answer == 0) {
        reports_.set(node, {node_status::refused, "holds another value"});
    } else if (answer == -1) {
        // Never counted, even if repaired below: a missing key is not ours.
        reports_.set(node, {node_status::refused, "the key is missing (restarted or evicted)"});
        missing_[node] = true;
    } else {
        reports_.set(node, failed_outcome(event));
    }
    decide(tally_.outcome(reports_.status(node)));
}

void extend_op::decide(quorum_tally::verdict verdict) {
    if (verdict == quorum_tally::verdict::pending) return;
    open_ = false;
    const std::size_t n = ctx_.node_count();
    if (verdict == quorum_tally::verdict::lost) {
        // A majority that answered "not ours" is definite: the lock is gone.
        if (tally_.refused_count() > n - tally_.needed()) {
            fail(errc::not_held, "a majority of nodes no longer hold it");
        } else {
            fail(errc::quorum_unreachable, "fewer than a majority of nodes confirmed in time");
        }
        return;
    }
    const auto now = steady_clock::now();
    const auto old_deadline = state_->valid_until();
    if (!state_->adopted && now >= old_deadline) {
        fail(errc::not_held, "the majority confirmed only after the validity had ended");
        return;
    }
    const milliseconds v = validity(ttl_, now - start_, ctx_.config().clock_drift_factor,
                                    ctx_.config().clock_drift_floor);
    // The script never shortens a TTL on a node, so neither does this.
    const auto deadline = state_->adopted ? now + v : std::max(old_deadline, now + v);
    if (v <= milliseconds{0} && state_->adopted) {
        fail(errc::not_held, "confirmed, but with no validity left after elapsed time and drift");
        return;
    }
    state_->adopted = false;  // from now on its validity is known
    state_->set_valid_until(deadline);
    finished_ = true;
    extended_ = true;
    repair_missing();
    deliver(done_, result<milliseconds>{std::chrono::floor<milliseconds>(deadline - now)});
}

void extend_op::repair_missing() {
    // Only now, with the lock confirmed on a majority and valid: put the key
    // back where it went missing, with SET NX so that nothing is overwritten.
    // These answers never count toward any quorum.
    for (std::size_t i = 0; i < missing_.size(); ++i) {
        if (missing_[i]) send_repair(i);
    }
}

void extend_op::send_repair(std::size_t node) {
    const lock_keys keys = keys_of(*state_);
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
    std::string message = "cannot extend '" + state_->resources.front() + "': " + why +
                          "; it stays valid until its previous deadline" + describe_nodes();
    deliver(done_,
            result<milliseconds>{failure{error{
                make_error_code(code), std::move(message),
                reports_.to_reports([this](std::size_t i) { return ctx_.node(i).name(); }), 0}}});
}

auto extend_op::describe_nodes() const -> std::string {
    std::string text = " (" + std::to_string(tally_.yes_count()) + " of " +
                       std::to_string(ctx_.node_count()) + " confirmed, " +
                       std::to_string(tally_.needed()) + " needed";
    reports_.append_problems(text, [this](std::size_t i) { return ctx_.node(i).name(); });
    return text + ")";
}

void extend_op::cancel(errc) {
    // Let it finish: it is bounded by request_timeout, and its outcome (a new
    // deadline, or none) is what the holder needs to know.
}

}  // namespace redlock::detail
