#include "operations/watchdog.hpp"

#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/hash_slot.hpp"
#include "transport/callback_guard.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

auto watchdog::now() noexcept -> steady_clock::time_point {
    return steady_clock::now();
}

void release_when_invalid(op_context& ctx, std::shared_ptr<lock_state> state) {
    if (state->released.load(std::memory_order_acquire)) return;
    const milliseconds wait = lost_release_delay(state->valid_until(), steady_clock::now());
    if (wait.count() == 0) {
        ctx.release_lost(std::move(state));
        return;
    }
    // Asked again when the timer fires: its clock may lag the steady clock.
    ctx.timers().schedule(wait, [&ctx, state = std::move(state)]() mutable {
        release_when_invalid(ctx, std::move(state));
    });
}

auto watchdog::view_of(const lock_state& state) noexcept -> renewal_lock_view {
    return {state.valid_until(), state.released.load(std::memory_order_acquire)};
}

void watchdog::watch(std::shared_ptr<lock_state> state) {
    if (auto session = state->session.lock()) {
        sessions_.join(std::move(state), std::move(session));
        return;
    }
    const lock_state* key = state.get();
    forget(key);  // watched afresh: the old timers must not fire for it
    renewal_decision decision{{.nodes = ctx_.node_count(),
                               .ttl = state->ttl,
                               .renew_fraction = ctx_.config().lock.renew_fraction,
                               .request_timeout = ctx_.config().request_timeout}};
    const renewal_actions first = decision.start(view_of(*state), now());
    const auto placed = entries_.emplace(key, entry{.state = std::move(state),
                                                    .generation = ++next_generation_,
                                                    .decision = std::move(decision),
                                                    .told_through = now()});
    perform(placed.first->second, first);
}

void watchdog::forget(const lock_state* key) {
    sessions_.forget(key);
    const auto it = entries_.find(key);
    if (it == entries_.end()) return;
    stop(it->second);
    entries_.erase(it);
}

void watchdog::forget_all() {
    sessions_.forget_all();
    for (auto& [key, e] : entries_) stop(e);
    entries_.clear();
}

void watchdog::stop(entry& e) {
    ctx_.timers().cancel(e.renew_timer);
    ctx_.timers().cancel(e.deadline_timer);
}

auto watchdog::find(const lock_state* key, std::uint64_t generation) -> entry* {
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.generation != generation) return nullptr;
    return &it->second;
}

void watchdog::perform(entry& e, const renewal_actions& a,
                       const std::vector<node_report>& stepped) {
    const lock_state* key = e.state.get();
    const std::uint64_t g = e.generation;
    if (a.renewed) ctx_.counters().renewals.fetch_add(1, std::memory_order_relaxed);
    if (a.deadline_in) {
        ctx_.timers().cancel(e.deadline_timer);
        e.deadline_timer = ctx_.timers().schedule(*a.deadline_in,
                                                  [this, key, g] { deadline_timer_fired(key, g); });
    }
    if (a.renew_in) {
        ctx_.timers().cancel(e.renew_timer);
        e.renew_timer =
            ctx_.timers().schedule(*a.renew_in, [this, key, g] { renew_timer_fired(key, g); });
    }
    if (a.send_extend) {
        // TIME first on each node's connection: its answer is judged before the
        // extend's is read, so a step seen by this renewal is told with it.
        const std::uint16_t slot = resource_slot(e.state->resources.front());
        for (std::size_t i = 0; i < ctx_.node_count(); ++i) ctx_.node(i).probe_clock(slot);
        ctx_.extend(e.state, e.state->ttl, [this, key, g](result<milliseconds> outcome) {
            on_extended(key, g, std::move(outcome));
        });
        return;
    }
    if (a.end == renewal_actions::ending::none) return;
    std::shared_ptr<lock_state> state = std::move(e.state);
    std::optional<error> why;
    if (a.end == renewal_actions::ending::lost) {
        why = e.decision.loss_error(a.loss, state->resources.front(),
                                    [this](std::size_t i) { return ctx_.node(i).name(); });
        for (const node_report& n : stepped) why->message += "; " + n.node + ": " + n.detail;
    }
    stop(e);
    entries_.erase(key);
    if (why) mark_lost(std::move(state), *why);
}

void watchdog::renew_timer_fired(const lock_state* key, std::uint64_t generation) {
    entry* e = find(key, generation);
    if (e == nullptr) return;
    perform(*e, e->decision.on_renew_timer());
}

void watchdog::deadline_timer_fired(const lock_state* key, std::uint64_t generation) {
    entry* e = find(key, generation);
    if (e == nullptr) return;
    const renewal_actions a = e->decision.on_deadline_timer(view_of(*e->state), now());
    perform(
        *e, a,
        a.end == renewal_actions::ending::lost ? stepped_nodes(*e) : std::vector<node_report>{});
}

void watchdog::on_extended(const lock_state* key, std::uint64_t generation,
                           result<milliseconds> outcome) {
    entry* e = find(key, generation);
    if (e == nullptr) return;  // released or forgotten meanwhile
    const renewal_actions a = e->decision.on_extended(outcome, view_of(*e->state), now());
    // Told with a renewal that went through, or with the loss; a renewal that
    // is retried tells at its retry.
    std::vector<node_report> stepped;
    if (a.renewed || a.end == renewal_actions::ending::lost) stepped = stepped_nodes(*e);
    std::shared_ptr<lock_state> state = e->state;  // perform may drop the entry
    perform(*e, a, stepped);
    if (a.renewed && !stepped.empty()) tell_shrunk(state, std::move(stepped));
}

auto watchdog::stepped_nodes(entry& e) -> std::vector<node_report> {
    std::vector<node_report> out;
    const std::uint16_t slot = resource_slot(e.state->resources.front());
    const steady_clock::time_point since = std::exchange(e.told_through, now());
    for (std::size_t i = 0; i < ctx_.node_count(); ++i) {
        const std::optional<clock_step_note> step = ctx_.node(i).clock_step(slot);
        if (!step || step->seen <= since) continue;
        std::string why = step->describe();
        if (step->verdict.result == clock_verdict::kind::forward)
            why += ", so the lock's key may have expired there early";
        why += step->quarantine.count() > 0 ? "; its grants are not counted for " +
                                                  std::to_string(step->quarantine.count()) + " ms"
                                            : "";
        out.push_back({ctx_.node(i).name(), node_status::error, std::move(why)});
    }
    return out;
}

void watchdog::tell_shrunk(const std::shared_ptr<lock_state>& state,
                           std::vector<node_report> stepped) {
    if (!state->on_shrunk || !*state->on_shrunk) return;
    shrink_report report;
    report.message = "lock on '" + state->resources.front() + "': held on fewer nodes:";
    for (const node_report& n : stepped) report.message += " " + n.node + ": " + n.detail + ";";
    report.message.pop_back();
    report.nodes = std::move(stepped);
    // A copy: it may run again at a later renewal, whatever this call does.
    const auto on_shrunk = *state->on_shrunk;
    const lock handle = lock_state::handle(state);
    call_guarded([&] { on_shrunk(handle, report); });
}

void watchdog::mark_lost(std::shared_ptr<lock_state> state, const error& why) {
    state->lost.store(true, std::memory_order_release);
    state->uncount_held();
    state->lost_source.request_stop();
    ctx_.counters().locks_lost.fetch_add(1, std::memory_order_relaxed);
    // Let go of it once its validity has ended: the nodes that still hold this
    // value would otherwise keep the resource for up to a TTL more. Not if
    // on_lost released it already.
    auto tell = [ctx = &ctx_, state](const error& told) {
        if (state->on_lost && *state->on_lost) {
            auto on_lost = std::move(state->on_lost);
            const lock handle = lock_state::handle(state);
            call_guarded([&] { (*on_lost)(handle, told); });
        }
        release_when_invalid(*ctx, state);
    };
    const bool refused = std::ranges::any_of(
        why.nodes, [](const node_report& n) { return n.status == node_status::refused; });
    if (!refused || !state->on_lost || !*state->on_lost || state->resources.size() != 1) {
        tell(why);
        return;
    }
    // Gone where a node answered: a break leaves its cause there (one more
    // read-only round trip, on the loss path only).
    ctx_.explain_loss(*state, why, std::move(tell));
}

}  // namespace redlock::detail
