#include "operations/watchdog.hpp"

#include "sansio/delay_policy.hpp"
#include "transport/callback_guard.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"

#include <algorithm>
#include <utility>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

void watchdog::watch(std::shared_ptr<lock_state> state) {
    const lock_state* key = state.get();
    entry& e = entries_[key];
    e.state = std::move(state);
    e.generation = ++next_generation_;
    schedule_renewal(e, renew_interval(e.state->ttl, ctx_.config().lock.renew_fraction));
    arm_deadline(e);
}

void watchdog::forget(const lock_state* key) {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return;
    ctx_.timers().cancel(it->second.renew_timer);
    ctx_.timers().cancel(it->second.deadline_timer);
    entries_.erase(it);
}

void watchdog::forget_all() {
    for (auto& [key, e] : entries_) {
        ctx_.timers().cancel(e.renew_timer);
        ctx_.timers().cancel(e.deadline_timer);
    }
    entries_.clear();
}

auto watchdog::nodes_at_deadline(const entry& e) const -> std::vector<node_report> {
    if (!e.last_nodes.empty()) return e.last_nodes;
    // No renewal has failed yet: the one in flight has had no answer from
    // enough nodes (hung ones, say) to be decided.
    std::vector<node_report> nodes;
    nodes.reserve(ctx_.node_count());
    for (std::size_t i = 0; i < ctx_.node_count(); ++i) {
        nodes.push_back({ctx_.node(i).name(), node_status::pending,
                         e.renewing ? "no answer yet to the renewal in flight" : ""});
    }
    return nodes;
}

auto watchdog::find(const lock_state* key, std::uint64_t generation) -> entry* {
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.generation != generation) return nullptr;
    return &it->second;
}

void watchdog::schedule_renewal(entry& e, milliseconds delay) {
    ctx_.timers().cancel(e.renew_timer);
    e.renew_timer = ctx_.timers().schedule(
        delay, [this, key = e.state.get(), g = e.generation] { renew(key, g); });
}

void watchdog::arm_deadline(entry& e) {
    ctx_.timers().cancel(e.deadline_timer);
    const auto left = std::chrono::ceil<milliseconds>(e.state->valid_until() - steady_clock::now());
    e.deadline_timer = ctx_.timers().schedule(left, [this, key = e.state.get(), g = e.generation] {
        entry* current = find(key, g);
        if (current == nullptr) return;
        if (steady_clock::now() < current->state->valid_until()) {
            // Early (the loop's clock is cached in whole milliseconds and lags
            // the steady clock), or the deadline moved (a manual extend): wait
            // for the deadline as it stands now.
            arm_deadline(*current);
            return;
        }
        mark_lost(key, error{make_error_code(errc::lock_lost),
                             "lock on '" + current->state->resources.front() +
                                 "' lost: no renewal reached a majority before its validity ended",
                             nodes_at_deadline(*current), 0});
    });
}

void watchdog::renew(const lock_state* key, std::uint64_t generation) {
    entry* e = find(key, generation);
    if (e == nullptr || e->renewing) return;
    e->renewing = true;
    ctx_.extend(e->state, e->state->ttl, [this, key, generation](result<milliseconds> outcome) {
        on_extended(key, generation, std::move(outcome));
    });
}

void watchdog::on_extended(const lock_state* key, std::uint64_t generation,
                           result<milliseconds> outcome) {
    entry* e = find(key, generation);
    if (e == nullptr) return;  // released or forgotten meanwhile
    e->renewing = false;
    if (outcome) {
        ctx_.counters().renewals.fetch_add(1, std::memory_order_relaxed);
        e->last_nodes.clear();  // a later loss must not report an older failure
        arm_deadline(*e);
        schedule_renewal(*e, renew_interval(e->state->ttl, ctx_.config().lock.renew_fraction));
        return;
    }
    const error& why = outcome.error();
    // Kept for a loss at the deadline. An extend refused before it was sent
    // (invalid_argument) has no per-node answers: the older ones stay.
    if (!why.nodes.empty()) e->last_nodes = why.nodes;
    if (why.code == errc::not_held || why.code == errc::invalid_argument) {
        mark_lost(key, error{make_error_code(errc::lock_lost),
                             "lock on '" + e->state->resources.front() + "' lost: " + why.message,
                             why.nodes, 0});
        return;
    }
    // Nodes slow or down: try again soon, while the validity lasts. The
    // deadline timer reports the loss if no attempt gets through in time.
    schedule_renewal(*e, renew_retry_gap(ctx_.config().request_timeout));
}

void watchdog::mark_lost(const lock_state* key, error why) {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return;
    std::shared_ptr<lock_state> state = std::move(it->second.state);
    ctx_.timers().cancel(it->second.renew_timer);
    ctx_.timers().cancel(it->second.deadline_timer);
    entries_.erase(it);
    // A release on another thread sets `released` before its task reaches the
    // loop to forget this entry; a renewal refused meanwhile is not a loss.
    if (state->released.load(std::memory_order_acquire)) return;

    state->lost.store(true, std::memory_order_release);
    state->uncount_held();
    state->lost_source.request_stop();
    ctx_.counters().locks_lost.fetch_add(1, std::memory_order_relaxed);
    if (state->on_lost && *state->on_lost) {
        auto on_lost = std::move(state->on_lost);
        const lock handle = lock_state::handle(state);
        call_guarded([&] { (*on_lost)(handle, why); });
    }
    // Let go of it: the nodes that still hold this value would otherwise keep
    // the resource for up to a TTL. Not if on_lost released it already.
    if (!state->released.load(std::memory_order_acquire)) ctx_.release_lost(std::move(state));
}

}  // namespace redlock::detail
