#include "operations/session_renew_op.hpp"

#include "operations/lock_commands.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/command.hpp"
#include "sansio/script_fallback.hpp"
#include "sansio/scripts.hpp"

#include <span>
#include <utility>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

session_renew_op::session_renew_op(op_context& ctx, std::vector<std::shared_ptr<lock_state>> locks,
                                   milliseconds ttl, callback done)
    : operation{ctx},
      locks_{std::move(locks)},
      ttl_{ttl},
      ttl_text_{std::to_string(ttl.count())},
      done_{std::move(done)} {
    for (const auto& lock : locks_) {
        const lock_keys keys = keys_of(ctx.keys(), *lock);
        first_key_.push_back(keys_.size());
        keys_per_lock_.push_back(keys.all().size());
        for (std::string_view k : keys.all()) keys_.emplace_back(k);
    }
    // Calls end at a lock's boundary, once they hold max_keys_per_call keys.
    std::size_t in_part = 0;
    for (std::size_t lock = 0; lock < locks_.size(); ++lock) {
        if (lock == 0 || in_part >= max_keys_per_call) {
            parts_.push_back(lock);
            in_part = 0;
        }
        in_part += keys_per_lock_[lock];
    }
    parts_.push_back(locks_.size());
}

auto session_renew_op::now() noexcept -> steady_clock::time_point {
    return steady_clock::now();
}

auto session_renew_op::command(std::size_t part, bool eval) const -> encoded_command {
    const script& s = session_extend_script();
    const std::size_t from = parts_[part];
    const std::size_t to = parts_[part + 1];
    const std::size_t first_key = first_key_[from];
    const std::size_t keys = (to < locks_.size() ? first_key_[to] : keys_.size()) - first_key;
    const std::string count = std::to_string(keys);
    std::vector<std::string_view> argv;
    argv.reserve(4 + 2 * keys);
    argv.push_back(eval ? "EVAL" : "EVALSHA");
    argv.push_back(eval ? s.source : std::string_view{s.sha});
    argv.push_back(count);
    for (std::size_t k = first_key; k < first_key + keys; ++k) argv.push_back(keys_[k]);
    argv.push_back(ttl_text_);
    for (std::size_t lock = from; lock < to; ++lock) {
        for (std::size_t i = 0; i < keys_per_lock_[lock]; ++i) argv.push_back(locks_[lock]->value);
    }
    return encoded_command{argv};
}

void session_renew_op::start() {
    const std::size_t n = ctx_.node_count();
    replies_.assign(n, {});
    for (auto& r : replies_) r.answers.emplace(locks_.size(), session_answer::failed);
    calls_.resize(parts_.size() - 1);
    sent_ = now();
    for (std::size_t i = 0; i < n; ++i) send_part(i, 0);
}

void session_renew_op::send_part(std::size_t node, std::size_t part) {
    if (!calls_[part]) calls_[part] = command(part, false);
    send(node, *calls_[part], make_tag(static_cast<std::uint32_t>(part), sha_kind, node), true);
}

void session_renew_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::uint32_t k = tag_kind(tag);
    if (k == repair_kind || finished_) return;  // repairs: best effort, never counted
    const std::size_t node = tag_node(tag);
    const std::size_t part = tag_attempt(tag);
    const script_form sent = k == eval_kind ? script_form::eval : script_form::evalsha;
    if (after_script_reply(sent, event) == script_reply::resend_as_eval) {
        send(node, command(part, true), make_tag(tag_attempt(tag), eval_kind, node), true);
        return;
    }
    const std::size_t from = parts_[part];
    const std::size_t count = parts_[part + 1] - from;
    const std::span<const std::size_t> keys{keys_per_lock_.data() + from, count};
    const session_node_reply reply = session_reply_of(event, keys);
    merge_session_part(replies_[node], from, count, reply);
    if (const auto next = session_next_part(reply.status, part, parts_.size() - 1)) {
        send_part(node, *next);
        return;
    }
    if (++nodes_done_ < replies_.size()) return;
    for (auto& r : replies_) finish_session_reply(r);
    finish();
}

void session_renew_op::finish() {
    finished_ = true;
    std::vector<steady_clock::time_point> valid_until;
    valid_until.reserve(locks_.size());
    for (const auto& lock : locks_) valid_until.push_back(lock->valid_until());
    const session_settings settings{.nodes = ctx_.node_count(),
                                    .ttl = ttl_,
                                    .renew_fraction = ctx_.config().lock.renew_fraction,
                                    .request_timeout = ctx_.config().request_timeout,
                                    .drift_factor = ctx_.config().clock_drift_factor,
                                    .drift_floor = ctx_.config().clock_drift_floor};
    session_round round{std::move(locks_), std::move(replies_), {}};
    round.outcome = decide_session_round(settings, round.replies, valid_until, sent_, now());
    locks_ = round.locks;  // repair() reads them
    // Only with the lock confirmed on a majority and valid: SET NX, so that
    // nothing is overwritten; never for a lock released meanwhile.
    for (const auto& [lock, node] : round.outcome.repairs) repair(lock, node);
    deliver(done_, std::move(round));
}

void session_renew_op::repair(std::size_t lock, std::size_t node) {
    const auto& state = locks_[lock];
    if (state->released.load(std::memory_order_acquire)) return;
    for (std::size_t i = 0; i < keys_per_lock_[lock]; ++i) {
        send(node, {"SET", keys_[first_key_[lock] + i], state->value, "NX", "PX", ttl_text_},
             make_tag(0, repair_kind, node));
    }
}

}  // namespace redlock::detail
