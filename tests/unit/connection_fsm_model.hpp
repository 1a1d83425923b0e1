#pragma once

// A model of what the libuv shell owns (stream, timers, resolver request, the
// request FIFO), driven by connection_fsm's actions. It checks every action
// against the state of the handle it touches, so a test that feeds events to
// the machine finds any double close, reuse of a closing handle, lost or
// twice-answered request, write before the handshake, or callback after close.

#include "sansio/connection_fsm.hpp"
#include "sansio/request_fifo.hpp"

#include <doctest/doctest.h>

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

    explicit shell_model(connection_fsm::settings s) : fsm{s} {}

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

    /// The owner queues a request, as node_connection::send does.
    void send(std::uint32_t tag) {
        if (fsm.accepts_requests()) {
            fifo.push(&sink, tag, 0);
            if (fsm.ready()) {
                written.push_back(tag);
            } else {
                held.push_back(tag);  // waits for the handshake
            }
        } else {
            // Failed at once (on the next loop turn), never queued.
            sink.on_reply(tag, reply_event{fsm.stopping() ? request_status::stopped
                                                          : request_status::unreachable,
                                           nullptr, "down"});
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

    connection_fsm fsm;
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

}  // namespace redlock_test
