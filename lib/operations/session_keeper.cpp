#include "operations/session_keeper.hpp"

#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "operations/session_state.hpp"
#include "operations/watchdog.hpp"
#include "sansio/delay_policy.hpp"
#include "transport/callback_guard.hpp"

#include <algorithm>
#include <utility>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

/// The locks' deadlines, those released meanwhile left out.
auto deadlines(const std::vector<std::shared_ptr<lock_state>>& locks)
    -> std::vector<steady_clock::time_point> {
    std::vector<steady_clock::time_point> out;
    out.reserve(locks.size());
    for (const auto& l : locks) {
        if (!l->released.load(std::memory_order_acquire)) out.push_back(l->valid_until());
    }
    return out;
}

auto lost_error(std::string message, std::vector<node_report> nodes) -> error {
    return error{make_error_code(errc::lock_lost), std::move(message), std::move(nodes), 0};
}

}  // namespace

auto session_keeper::now() noexcept -> steady_clock::time_point {
    return steady_clock::now();
}

void session_keeper::join(std::shared_ptr<lock_state> state,
                          std::shared_ptr<session_state> session) {
    if (session->closed.load(std::memory_order_acquire)) {
        // Lost or closed while this lock was being acquired: it cannot be kept.
        const std::string why = session->lost.load(std::memory_order_acquire)
                                    ? "its session " + session->id + " was lost"
                                    : "its session " + session->id + " was closed";
        error lost = lost_error(
            "lock on '" + state->resources.front() + "' lost: " + why + " while it was acquired",
            {});
        lose_one_(std::move(state), lost);
        return;
    }
    {
        std::lock_guard held{session->mutex};
        session->members.push_back(state);
    }
    const session_state* key = session.get();
    auto [it, fresh] = entries_.try_emplace(key);
    entry& e = it->second;
    if (fresh) {
        e.session = std::move(session);
        e.generation = ++next_generation_;
        const std::uint64_t g = e.generation;
        e.renew_timer = ctx_.timers().schedule(
            renew_interval(e.session->ttl, ctx_.config().lock.renew_fraction),
            [this, key, g] { renew(key, g); });
    }
    // O(1) per join: a new lock's deadline is rarely the earliest.
    const auto until = state->valid_until();
    if (!e.deadline_at || until < *e.deadline_at) arm_deadline_at(e, until);
}

void session_keeper::forget(const lock_state* state) {
    if (state == nullptr) return;  // an empty handle's release
    const std::shared_ptr<session_state> session = state->session.lock();
    if (!session) return;
    std::lock_guard held{session->mutex};
    std::erase_if(session->members, [state](const auto& m) { return m.get() == state; });
}

void session_keeper::forget_all() {
    for (auto& [key, e] : entries_) stop(e);
    entries_.clear();
}

void session_keeper::stop(entry& e) {
    ctx_.timers().cancel(e.renew_timer);
    ctx_.timers().cancel(e.deadline_timer);
}

auto session_keeper::find(const session_state* key, std::uint64_t generation) -> entry* {
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.generation != generation) return nullptr;
    return &it->second;
}

void session_keeper::renew(const session_state* key, std::uint64_t generation) {
    entry* e = find(key, generation);
    if (e == nullptr || e->in_flight) return;
    auto locks = e->session->snapshot();
    std::erase_if(locks, [](const auto& l) { return l->released.load(std::memory_order_acquire); });
    if (locks.empty()) {
        // Nothing left to renew: the entry goes; a lock that joins later starts it again.
        stop(*e);
        entries_.erase(key);
        return;
    }
    e->in_flight = true;
    ctx_.start(std::make_unique<session_renew_op>(ctx_, std::move(locks), e->session->ttl,
                                                  [this, key, generation](session_round round) {
                                                      on_round(key, generation, std::move(round));
                                                  }));
}

void session_keeper::on_round(const session_state* key, std::uint64_t generation,
                              session_round round) {
    entry* e = find(key, generation);
    if (e == nullptr) return;  // stopped meanwhile
    e->in_flight = false;
    const session_round_outcome& out = round.outcome;
    e->last_nodes.clear();
    for (std::size_t i = 0; i < round.replies.size(); ++i) {
        const auto& r = round.replies[i];
        e->last_nodes.push_back(
            {ctx_.node(i).name(), r.answers ? node_status::ok : r.status, r.cause});
    }
    ctx_.counters().renewals.fetch_add(out.renewed.size(), std::memory_order_relaxed);
    for (std::size_t i : out.renewed) {
        const auto& s = round.locks[i];
        s->set_valid_until(std::max(s->valid_until(), out.deadline));
    }
    for (std::size_t i : out.refused) {
        std::shared_ptr<lock_state> s = round.locks[i];
        if (s->released.load(std::memory_order_acquire) || s->lost.load(std::memory_order_acquire))
            continue;
        forget(s.get());
        const auto statuses = session_lock_reports(round.replies, i);
        std::vector<node_report> nodes;
        for (std::size_t n = 0; n < statuses.size(); ++n) {
            nodes.push_back({ctx_.node(n).name(), statuses[n], round.replies[n].cause});
        }
        lose_one_(std::move(s), lost_error("lock on '" + round.locks[i]->resources.front() +
                                               "' lost: a majority no longer holds it (renewed "
                                               "in session " +
                                               e->session->id + ")",
                                           std::move(nodes)));
    }
    e = find(key, generation);  // a loss above may have run user code
    if (e == nullptr) return;
    const std::uint64_t g = e->generation;
    ctx_.timers().cancel(e->renew_timer);
    e->renew_timer = ctx_.timers().schedule(out.next_in, [this, key, g] { renew(key, g); });
    arm_deadline(*e);
}

void session_keeper::arm_deadline(entry& e) {
    ctx_.timers().cancel(e.deadline_timer);
    e.deadline_at.reset();
    const auto next = session_next_deadline(deadlines(e.session->snapshot()));
    if (next) arm_deadline_at(e, *next);
}

void session_keeper::arm_deadline_at(entry& e, steady_clock::time_point at) {
    ctx_.timers().cancel(e.deadline_timer);
    e.deadline_at = at;
    const session_state* key = e.session.get();
    const std::uint64_t g = e.generation;
    const auto in = std::max(milliseconds{0}, std::chrono::ceil<milliseconds>(at - now()));
    e.deadline_timer = ctx_.timers().schedule(in, [this, key, g] { check_deadline(key, g); });
}

void session_keeper::check_deadline(const session_state* key, std::uint64_t generation) {
    entry* e = find(key, generation);
    if (e == nullptr) return;
    if (session_expired(deadlines(e->session->snapshot()), now())) {
        lose_session(*e);
        return;
    }
    arm_deadline(*e);
}

void session_keeper::lose_session(entry& e) {
    std::shared_ptr<session_state> session = e.session;
    std::vector<node_report> nodes = std::move(e.last_nodes);
    stop(e);
    entries_.erase(session.get());
    session->lost.store(true, std::memory_order_release);
    session->closed.store(true, std::memory_order_release);
    std::vector<std::shared_ptr<lock_state>> members;
    {
        std::lock_guard held{session->mutex};
        members.swap(session->members);
    }
    session_loss loss;
    for (const auto& s : members) {
        if (s->released.load(std::memory_order_acquire)) continue;
        s->lost.store(true, std::memory_order_release);
        s->uncount_held();
        s->lost_source.request_stop();
        ctx_.counters().locks_lost.fetch_add(1, std::memory_order_relaxed);
        loss.resources.push_back(s->resources.front());
        // What the nodes still hold of it goes at its validity's end, not at its
        // TTL (best effort).
        release_when_invalid(ctx_, s);
    }
    loss.message = "session " + session->id + " lost: " + std::to_string(loss.resources.size()) +
                   " locks marked lost: no renewal reached a majority of nodes before their "
                   "validity ended";
    loss.nodes = std::move(nodes);
    session->lost_source.request_stop();
    if (session->on_lost && *session->on_lost) {
        auto on_lost = std::move(session->on_lost);
        call_guarded([&] { (*on_lost)(loss); });
    }
}

}  // namespace redlock::detail
