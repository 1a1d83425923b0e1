#pragma once

// A model of what the libuv shell owns (stream, timers, resolver request, the
// request FIFO), driven by connection_fsm's actions. It checks every action
// against the state of the handle it touches, so a test that feeds events to
// the machine finds any double close, reuse of a closing handle, lost or
// twice-answered request, write before the handshake, or callback after close.
// Requests take on_request's route and deadline; the deadline timer is armed
// as it says, and must never sleep past the deadline of a request waiting.

#include "sansio/connection_fsm.hpp"
#include "sansio/request_fifo.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace redlock_test {

using redlock::detail::connection_fsm;
using redlock::detail::reply_event;
using redlock::detail::reply_sink;
using redlock::detail::request_fifo;
using redlock::detail::request_status;

/// Counts every outcome of every request, by tag.
class counting_sink final : public reply_sink {
public:
    void on_reply(std::uint32_t tag, const reply_event& event) noexcept override {
        ++outcomes[tag];
        if (event.status == request_status::reply) ++replies;
    }
    std::map<std::uint32_t, int> outcomes;
    int replies = 0;
};

class shell_model {
public:
    enum class handle { none, open, closing };
    enum class timer { idle, connect, reconnect, closing, closed };

    explicit shell_model(connection_fsm::settings s) : fsm{s}, settings{s} {}

    /// Feeds `in` and applies the actions, checking each. Returns them.
    auto feed(const connection_fsm::input& in) -> connection_fsm::actions {
        const auto before = fsm.current();
        connection_fsm::actions a = fsm.on(in);
        const std::string where = std::string{to_string(in.what)} + " in " + to_string(before);
        if (closed_notified) {
            // Nothing may happen to a connection that told its owner it closed.
            CHECK_MESSAGE(empty(a), "actions after close: " << where);
            return a;
        }
        if (a.stop_connect_timer && timers != timer::closing && timers != timer::closed) {
            timers = timer::idle;
        }
        if (a.cancel_resolve) {
            CHECK_MESSAGE(resolver_busy, "cancel of an idle resolver: " << where);
        }
        if (a.close_stream) {
            CHECK_MESSAGE(stream == handle::open, "close of a stream not open: " << where);
            stream = handle::closing;
            handshake_sent = false;
        }
        if (a.close_timers) {
            CHECK_MESSAGE((timers != timer::closing && timers != timer::closed),
                          "timers closed twice: " << where);
            timers = timer::closing;
            deadline_due = connection_fsm::no_deadline;  // closed with them: never fires
        }
        if (a.fail_pending) {
            written.clear();
            held.clear();
            for (const auto& r : fifo.take_all()) {
                if (!r.expired && r.sink != nullptr)
                    r.sink->on_reply(r.tag, reply_event{*a.fail_pending, nullptr, a.cause});
            }
        }
        if (a.resolve) {
            CHECK_MESSAGE(!resolver_busy, "resolver request reused in flight: " << where);
            resolver_busy = true;
        }
        if (a.connect_to) {
            CHECK_MESSAGE(stream == handle::none, "connect on a stream in use: " << where);
            stream = handle::open;
            connecting = true;
        }
        if (a.arm_connect_timer_ms || a.arm_reconnect_timer_ms) {
            CHECK_MESSAGE((timers != timer::closing && timers != timer::closed),
                          "timer armed while closing: " << where);
            CHECK_MESSAGE(!(a.arm_connect_timer_ms && a.arm_reconnect_timer_ms),
                          "both timers at once: " << where);
            timers = a.arm_connect_timer_ms ? timer::connect : timer::reconnect;
            timer_due = now + (a.arm_connect_timer_ms ? *a.arm_connect_timer_ms
                                                      : *a.arm_reconnect_timer_ms);
        }
        if (a.arm_reconnect_timer_ms) {
            CHECK_MESSAGE(stream == handle::none, "reconnect before the stream closed: " << where);
        }
        if (a.start_handshake) {
            CHECK_MESSAGE((stream == handle::open && !connecting),
                          "handshake on a stream not connected: " << where);
            handshake_sent = true;
        }
        if (a.release_held) {
            CHECK_MESSAGE((stream == handle::open && handshake_sent),
                          "commands released before the handshake: " << where);
            for (auto tag : held) written.push_back(tag);
            held.clear();
        }
        if (a.notify_closed) {
            CHECK_MESSAGE((stream == handle::none && timers == timer::closed && !resolver_busy),
                          "closed with a handle open: " << where);
            closed_notified = true;
            ++close_notifications;
        }
        return a;
    }

    /// The owner queues a request, as node_connection::send does: what
    /// on_request says, checked against what it must say.
    void send(std::uint32_t tag) {
        const auto before = fsm.current();
        const auto a = fsm.on_request({now, 0, 40, true});
        const std::string where = std::string{"request in "} + to_string(before);
        using route = connection_fsm::request_route;
        if (a.route == route::fail_stopped || a.route == route::fail_unreachable) {
            CHECK_MESSAGE(before > connection_fsm::state::ready, "refused while up: " << where);
            CHECK_MESSAGE(fsm.stopping() == (a.route == route::fail_stopped), where);
            // Failed at once (on the next loop turn), never queued.
            sink.on_reply(tag, reply_event{fsm.stopping() ? request_status::stopped
                                                          : request_status::unreachable,
                                           nullptr, "down"});
            return;
        }
        CHECK_MESSAGE(before <= connection_fsm::state::ready, "queued while down: " << where);
        CHECK_MESSAGE((a.route == route::write) == fsm.ready(), where);
        const std::uint64_t wait = fsm.ready() ? 0 : settings.connect_timeout_ms;
        CHECK_MESSAGE(a.deadline == now + settings.request_timeout_ms + wait, where);
        fifo.push(&sink, tag, a.deadline);
        if (a.arm_deadline_timer) arm_deadline_timer(a.deadline, where);
        if (a.route == route::write) {
            written.push_back(tag);
        } else {
            held.push_back(tag);  // waits for the handshake
        }
        check_deadline_timer(where);
    }

    /// The deadline timer fires at `now`, as node_connection::on_deadline
    /// does: what is due expires, then after_expiry() says what comes next.
    void deadline_timer_fires() {
        REQUIRE(deadline_due != connection_fsm::no_deadline);
        CHECK((timers != timer::closing && timers != timer::closed));
        CHECK(now >= deadline_due);
        deadline_due = connection_fsm::no_deadline;
        fsm.on_deadline_timer();
        for (std::size_t i = 0; i < fifo.size(); ++i) {
            auto& r = fifo[i];
            if (r.expired || r.deadline > now) continue;
            // Held back behind the handshake, a request must fail as
            // unreachable when the connect timer ends it, not time out first.
            CHECK_MESSAGE(std::find(held.begin(), held.end(), r.tag) == held.end(),
                          "a held request timed out before the connect timer ended it");
            r.expired = true;
            ++timeouts;
            if (r.sink != nullptr)
                r.sink->on_reply(r.tag, reply_event{request_status::timeout, nullptr, "late"});
        }
        const auto a = fsm.after_expiry(now, fifo);
        if (a.recycle) {
            CHECK(fifo.front().expired);
            CHECK(a.owed_ms >= fsm.stale_after_ms());
            ++recycles;
            feed({connection_fsm::event::transport_error, "no reply", 0, 7});
        } else if (a.arm_deadline_timer) {
            arm_deadline_timer(a.next, "after expiry");
        }
        check_deadline_timer("after expiry");
    }

    /// The timer is armed no later than any waiting request's deadline, and
    /// the machine knows when it is due.
    void check_deadline_timer(const std::string& where) {
        CHECK_MESSAGE(fsm.deadline_armed() == deadline_due, where);
        for (std::size_t i = 0; i < fifo.size(); ++i) {
            if (fifo[i].expired) continue;
            CHECK_MESSAGE(deadline_due <= fifo[i].deadline,
                          "the deadline timer sleeps past a deadline: " << where);
        }
    }

    /// The node answers the oldest written request (only what was written).
    void reply() {
        if (written.empty() || fifo.empty()) return;
        CHECK(fsm.ready());
        written.erase(written.begin());
        const auto r = fifo.pop_front();
        if (!r.expired && r.sink != nullptr)
            r.sink->on_reply(r.tag, reply_event{request_status::reply, nullptr, {}});
    }

    static auto empty(const connection_fsm::actions& a) -> bool {
        return !a.stop_connect_timer && !a.cancel_resolve && !a.close_stream && !a.close_timers &&
               !a.resolve && !a.connect_to && !a.arm_connect_timer_ms &&
               !a.arm_reconnect_timer_ms && !a.start_handshake && !a.release_held &&
               !a.count_connected && a.warning.empty() && !a.fail_pending && !a.notify_closed;
    }

    void arm_deadline_timer(std::uint64_t deadline, const std::string& where) {
        CHECK_MESSAGE((timers != timer::closing && timers != timer::closed),
                      "deadline timer armed while closing: " << where);
        CHECK_MESSAGE(deadline < deadline_due, "re-armed for later: " << where);
        deadline_due = deadline;
    }

    connection_fsm fsm;
    connection_fsm::settings settings;
    std::uint64_t now = 1000;                                  // loop milliseconds
    std::uint64_t timer_due = 0;                               // the connect/reconnect timer
    std::uint64_t deadline_due = connection_fsm::no_deadline;  // the deadline timer
    int timeouts = 0;
    int recycles = 0;
    handle stream = handle::none;
    bool connecting = false;  // a connect is in flight on the open stream
    bool handshake_sent = false;
    timer timers = timer::idle;
    bool resolver_busy = false;
    bool closed_notified = false;
    int close_notifications = 0;
    request_fifo fifo;
    counting_sink sink;
    std::vector<std::uint32_t> held;     // queued, not written: waiting for the handshake
    std::vector<std::uint32_t> written;  // written, waiting for a reply
};

// The world's side of the events: each clears what the shell would clear
// before telling the machine (a close callback means the handle is gone).

inline void stream_closed(shell_model& m) {
    REQUIRE(m.stream == shell_model::handle::closing);
    m.stream = shell_model::handle::none;
    m.connecting = false;
    m.feed({connection_fsm::event::stream_closed});
}
inline void connect_result(shell_model& m, bool ok) {
    using ev = connection_fsm::event;
    REQUIRE(m.connecting);
    m.connecting = false;
    m.feed({ok ? ev::connect_ok : ev::connect_failed, ok ? "" : "cannot connect: refused"});
}
inline void resolver_returns(shell_model& m, std::size_t addresses) {
    using ev = connection_fsm::event;
    REQUIRE(m.resolver_busy);
    m.resolver_busy = false;
    m.feed({addresses > 0 ? ev::resolved : ev::resolve_failed, "no such host", addresses});
}
inline void timers_closed(shell_model& m) {
    REQUIRE(m.timers == shell_model::timer::closing);
    m.timers = shell_model::timer::closed;
    m.feed({connection_fsm::event::timers_closed});
}
/// Drives a fresh model to `target` by the shortest path.
inline void drive_to(shell_model& m, connection_fsm::state target) {
    using ev = connection_fsm::event;
    using st = connection_fsm::state;
    if (target == st::idle) return;
    if (target == st::stopping || target == st::stopped) {
        m.feed({ev::close_requested});
        if (target == st::stopped) timers_closed(m);
        return;
    }
    m.feed({ev::start});
    if (target == st::resolving) return;
    if (m.fsm.current() == st::resolving) resolver_returns(m, 2);
    if (target == st::connecting) return;
    if (target == st::backoff) {
        m.feed({ev::connect_timeout, "connect timeout"});
        return;
    }
    connect_result(m, true);
    if (target == st::handshaking) return;
    m.feed({ev::handshake_ok});
}

}  // namespace redlock_test
