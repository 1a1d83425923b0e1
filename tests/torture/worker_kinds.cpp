#include "worker_kinds.hpp"

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

namespace redlock_torture {

using namespace std::chrono_literals;

void nap(std::chrono::nanoseconds d, const std::stop_token& stop) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (!stop.stop_requested()) {
        const auto left = until - std::chrono::steady_clock::now();
        if (left <= 0ns) return;
        std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(left, 5ms));
    }
}

auto kind_of(const redlock::lock& held) -> hold_kind {
    switch (held.kind()) {
        case redlock::lock_kind::shared:
            return hold_kind::reader;
        case redlock::lock_kind::permit:
            return hold_kind::permit;
        case redlock::lock_kind::exclusive:
            break;
    }
    return hold_kind::writer;
}

namespace {

auto ns_of(std::chrono::steady_clock::time_point t) -> std::int64_t {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

void record_start(hold_record& r, const redlock::lock& held) {
    r.start_ns = monotonic_ns();
    r.valid_at_start = held.valid();
    r.until_start_ns = ns_of(held.valid_until());
    // What the lock says, kind and token: a lock of another kind than asked, or with a token
    // when none was asked for (or none when one was), is counted by the caller (the test
    // fails on it) and checked as what it is.
    r.fenced = held.fence().has_value();
    r.fence = held.fence().value_or(0);
    r.kind = kind_of(held);
    r.permits = held.permits().value_or(0);
    r.permit = held.permit().value_or(-1);
}

void record_end(hold_record& r, const redlock::lock& held) {
    r.end_ns = monotonic_ns();
    r.valid_at_end = held.valid();
    r.until_end_ns = ns_of(held.valid_until());
    r.lost = held.lost();
}

void release_into(hold_record& r, redlock::client& locks, const redlock::lock& held,
                  count_map& counts) {
    auto released = locks.release(held);
    if (released) {
        r.release_ok = 1;
        r.deleted = static_cast<int>(released->deleted);
        if (released->majority()) ++counts["released_on_majority"];
    } else {
        ++counts["release_failures"];
    }
}

auto draw_reentrant_plan(const std::function<std::int64_t(std::int64_t, std::int64_t)>& uniform,
                         std::int64_t hold_ms, int ttl_ms, bool renewed) -> reentrant_plan {
    reentrant_plan plan;
    plan.hold_ms = hold_ms;
    plan.reenter_at_ms = uniform(0, hold_ms);
    if (!renewed && uniform(0, 2) == 0) {
        plan.reenter_at_ms = ttl_ms + uniform(0, 50);
        plan.hold_ms = plan.reenter_at_ms + uniform(0, ttl_ms / 5);
    }
    plan.release_at_ms = uniform(plan.reenter_at_ms, plan.hold_ms);
    plan.extra = static_cast<int>(uniform(1, 2));
    plan.look_first = uniform(0, 1) == 0;
    return plan;
}

void reentrant_section(redlock::client& locks, const std::string& resource,
                       const redlock::lock_options& options, const redlock::lock& outer,
                       const hold_record& base, const reentrant_plan& plan,
                       const std::stop_token& stop, count_map& counts,
                       const std::function<void(const std::string&)>& write) {
    nap(std::chrono::milliseconds{plan.reenter_at_ms}, stop);
    std::vector<redlock::lock> inner;  // the holds taken again, in order
    for (int i = 0; i < plan.extra; ++i) {
        // A lock no longer valid is not re-entered: the owner gets a new one.
        const bool valid_before = outer.valid();
        if (plan.look_first && !valid_before) {
            ++counts["reentries_skipped"];
            break;
        }
        const std::int64_t called = monotonic_ns();
        auto again = locks.acquire(resource, options, stop);
        if (!again) {
            ++counts["reentry_failures"];
            break;
        }
        if (again->value() != outer.value()) {
            // The lock was no longer valid: a new lock, acquired on the nodes like any other,
            // is a hold of its own. It is released at once.
            ++counts["reentry_new_locks"];
            hold_record r = base;
            r.called_ns = called;
            record_start(r, *again);
            record_end(r, *again);
            if (r.kind != hold_kind::writer || r.fenced != options.fencing.value_or(false) ||
                again->holds() != 1)
                ++counts["reentry_mismatch"];
            release_into(r, locks, *again, counts);
            write(r.format());
            break;
        }
        ++counts["reentries"];
        // The same lock, one hold more: the outer hold and every re-entry so far are open. A
        // lock already invalid before the call must not have been re-entered.
        const int expected = 2 + i;
        if (!valid_before || again->holds() != expected || outer.holds() != expected ||
            again->fence() != outer.fence() || again->kind() != outer.kind() ||
            again->owner() != outer.owner())
            ++counts["reentry_mismatch"];
        inner.push_back(*again);
    }
    nap(std::chrono::milliseconds{plan.release_at_ms - plan.reenter_at_ms}, stop);
    // The last hold taken goes first; each release leaves the others open and sends nothing.
    while (!inner.empty()) {
        const int left = static_cast<int>(inner.size());  // the outer hold and the rest
        auto released = locks.release(inner.back());
        inner.pop_back();
        if (!released || released->holds_left != left || released->deleted != 0 ||
            !released->nodes.empty())
            ++counts["reentry_mismatch"];
    }
    nap(std::chrono::milliseconds{plan.hold_ms - plan.release_at_ms}, stop);
}

auto session_slot::take(int ttl_ms, count_map& counts) -> std::shared_ptr<open_session> {
    const std::lock_guard hold{mutex_};
    if (current_ && current_->handle.closed()) {
        // Closed sessions leave the slot as they close: this one was lost.
        if (current_->handle.lost()) ++counts["session_lost"];
        current_.reset();
    }
    if (!current_) {
        auto lost_at = std::make_shared<std::atomic<std::int64_t>>(0);
        redlock::session_options options;
        options.ttl = std::chrono::milliseconds{ttl_ms};
        options.on_lost = [lost_at](const redlock::session_loss&) {
            lost_at->store(monotonic_ns());
        };
        auto opened = client_->open_session(std::move(options));
        if (!opened) {
            ++counts["session_open_failures"];
            return nullptr;
        }
        ++counts["session_opens"];
        current_ = std::make_shared<open_session>(open_session{*opened, lost_at, 0});
    }
    ++current_->users;
    return current_;
}

void session_slot::give_back(const std::shared_ptr<open_session>& in) {
    const std::lock_guard hold{mutex_};
    --in->users;
}

void session_slot::release(hold_record& r, redlock::client& locks, const redlock::lock& held,
                           const std::shared_ptr<open_session>& in, bool close, count_map& counts) {
    {
        const std::lock_guard hold{mutex_};
        // Closed only when no other thread uses it: another's lock in it, or its acquisition
        // in flight, would be released under its feet.
        close = close && in->users == 1 && in == current_ && !in->handle.closed();
        if (close) {
            --in->users;
            current_.reset();  // the next take() opens another
        }
    }
    if (!close) {
        release_into(r, locks, held, counts);
        give_back(in);
        return;
    }
    ++counts["session_closes"];
    const auto closed = client_->close_session(in->handle);
    if (!closed) {
        ++counts["session_close_failures"];
        return;
    }
    r.release_ok = 1;
    r.deleted = closed->released == 1 ? 1 : 0;
    if (closed->released == 1) ++counts["released_on_majority"];
}

}  // namespace redlock_torture
