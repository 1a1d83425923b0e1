// The node connection's lifecycle (connection_fsm), without sockets: named
// scenarios for the failures seen in the field, every event in every state, and
// a seeded random interleaving of world and owner events, all checked against a
// model of the handles the libuv shell owns (connection_fsm_model.hpp).

#include "connection_fsm_model.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using redlock::detail::connection_fsm;
using redlock::detail::request_status;
using redlock_test::shell_model;
using ev = connection_fsm::event;
using st = connection_fsm::state;

constexpr connection_fsm::settings numeric{100, 20, 200, false};
constexpr connection_fsm::settings named{100, 20, 200, true};

}  // namespace

TEST_CASE("connection_fsm: a connection is ready only once the node answered its handshake") {
    shell_model m{numeric};
    m.feed({ev::start});
    CHECK(m.fsm.current() == st::connecting);
    m.send(1);  // queued while connecting: held, not written
    connect_result(m, true);
    CHECK(m.fsm.current() == st::handshaking);
    CHECK(m.written.empty());
    const auto a = m.feed({ev::handshake_ok});
    CHECK(a.release_held);
    CHECK(a.count_connected == true);
    CHECK(a.warning.empty());  // the first connection is not "again"
    CHECK(m.written == std::vector<std::uint32_t>{1});
    m.reply();
    CHECK(m.sink.outcomes[1] == 1);
}

TEST_CASE("connection_fsm: commands held behind an unanswered handshake fail unsent (item 2)") {
    shell_model m{numeric};
    m.feed({ev::start});
    m.send(1);
    m.send(2);
    connect_result(m, true);
    // A SIGSTOPped node: the kernel accepted the connection, nothing answers.
    const auto a = m.feed({ev::connect_timeout, "no answer to the handshake"});
    CHECK(a.fail_pending == request_status::unreachable);
    CHECK(a.close_stream);
    CHECK_FALSE(a.release_held);
    CHECK(m.written.empty());  // nothing of the lock reached the node
    CHECK(m.sink.outcomes[1] == 1);
    CHECK(m.sink.outcomes[2] == 1);
}

TEST_CASE("connection_fsm: each resolved address is tried in order within the timer (item 3)") {
    shell_model m{named};
    m.feed({ev::start});
    CHECK(m.fsm.current() == st::resolving);
    resolver_returns(m, 2);
    CHECK(m.fsm.address_index() == 0);
    auto a = m.feed({ev::connect_failed, "refused"});  // ::1 first, server on 127.0.0.1
    CHECK(a.close_stream);
    CHECK_FALSE(a.connect_to);  // not before the old stream has closed
    CHECK_FALSE(a.fail_pending);
    m.stream = shell_model::handle::none;
    m.connecting = false;
    a = m.feed({ev::stream_closed});
    REQUIRE(a.connect_to);
    CHECK(*a.connect_to == 1);
    connect_result(m, true);
    m.feed({ev::handshake_ok});
    CHECK(m.fsm.ready());
}

TEST_CASE("connection_fsm: the last address failing backs off and reports once per outage") {
    shell_model m{numeric};
    m.feed({ev::start});
    m.connecting = false;
    auto a = m.feed({ev::connect_failed, "cannot connect: refused"});
    CHECK(a.warning == "unreachable: cannot connect: refused");
    CHECK_FALSE(a.arm_reconnect_timer_ms);  // waits for the stream to close
    stream_closed(m);
    CHECK(m.timers == shell_model::timer::reconnect);
    for (int i = 0; i < 5; ++i) {
        a = m.feed({ev::backoff_elapsed});
        CHECK(a.connect_to);
        connect_result(m, true);
        // A frozen node: connects, never answers. No "connected", no new warning (item 5).
        a = m.feed({ev::connect_timeout, "no answer"});
        CHECK(a.warning.empty());
        CHECK_FALSE(a.count_connected == true);
        stream_closed(m);
    }
    m.feed({ev::backoff_elapsed});
    connect_result(m, true);
    a = m.feed({ev::handshake_ok});
    CHECK(a.warning == "connected again");
    a = m.feed({ev::transport_error, "connection closed by the server"});
    CHECK(a.warning == "unreachable: connection closed by the server");
}

TEST_CASE("connection_fsm: a close while the stream is already closing closes it once (item 1)") {
    shell_model m{numeric};
    drive_to(m, st::ready);
    m.send(7);
    // The failure path: the stream is closed first, then the requests fail; a sink
    // that closes the connection from that callback finds the stream closing.
    auto a = m.feed({ev::transport_error, "reset"});
    CHECK(a.close_stream);
    a = m.feed({ev::close_requested});
    CHECK_FALSE(a.close_stream);
    CHECK(a.close_timers);
    CHECK_FALSE(a.arm_reconnect_timer_ms);
    stream_closed(m);
    CHECK_FALSE(m.closed_notified);
    timers_closed(m);
    CHECK(m.closed_notified);
    CHECK(m.sink.outcomes[7] == 1);
}

TEST_CASE("connection_fsm: a resolver request is never reused while in flight") {
    shell_model m{named};
    m.feed({ev::start});
    auto a = m.feed({ev::connect_timeout, "connect timeout"});  // resolver still busy
    CHECK(a.cancel_resolve);
    CHECK(a.arm_reconnect_timer_ms);  // no stream to wait for
    a = m.feed({ev::backoff_elapsed});
    CHECK_FALSE(a.resolve);  // the cancelled look-up has not returned yet
    CHECK(m.fsm.current() == st::resolving);
    m.resolver_busy = false;
    a = m.feed({ev::resolve_failed, "cancelled"});
    CHECK(a.resolve);  // now the request is free
}

TEST_CASE("connection_fsm: every event in every state keeps the handles consistent") {
    constexpr std::array every_state{st::idle,  st::resolving, st::connecting, st::handshaking,
                                     st::ready, st::backoff,   st::stopping,   st::stopped};
    constexpr std::array events{ev::start,         ev::resolved,         ev::resolve_failed,
                                ev::connect_ok,    ev::connect_failed,   ev::connect_timeout,
                                ev::handshake_ok,  ev::handshake_failed, ev::transport_error,
                                ev::stream_closed, ev::backoff_elapsed,  ev::close_requested,
                                ev::timers_closed};
    for (const auto settings : {numeric, named}) {
        for (const st s : every_state) {
            for (const ev e : events) {
                const std::string state_name = to_string(s);
                const std::string event_name = to_string(e);
                CAPTURE(state_name);
                CAPTURE(event_name);
                shell_model m{settings};
                drive_to(m, s);
                REQUIRE(m.fsm.current() ==
                        (s == st::resolving && !settings.needs_resolver ? st::connecting : s));
                m.send(1);
                // The world only reports what can happen: a close callback for a
                // closing handle, a connect result for a connect in flight...
                bool possible = true;
                switch (e) {
                    case ev::resolved:
                    case ev::resolve_failed:
                        possible = m.resolver_busy;
                        m.resolver_busy = false;
                        break;
                    case ev::connect_ok:
                    case ev::connect_failed:
                        possible = m.connecting;
                        m.connecting = false;
                        break;
                    case ev::stream_closed:
                        possible = m.stream == shell_model::handle::closing;
                        if (possible) m.stream = shell_model::handle::none;
                        break;
                    case ev::timers_closed:
                        possible = m.timers == shell_model::timer::closing;
                        if (possible) m.timers = shell_model::timer::closed;
                        break;
                    default:
                        break;
                }
                if (!possible) continue;
                m.feed({e, "cause", 1, 42});
                // Whatever happened, closing ends in exactly one notification and
                // every request answered exactly once.
                m.feed({ev::close_requested});
                if (m.resolver_busy) resolver_returns(m, 0);
                if (m.stream == shell_model::handle::closing) stream_closed(m);
                if (m.timers == shell_model::timer::closing) timers_closed(m);
                CHECK(m.close_notifications == 1);
                CHECK(m.sink.outcomes[1] == 1);
            }
        }
    }
}

TEST_CASE("connection_fsm: reconnect delays grow, stay within bounds, and are jittered") {
    using f = connection_fsm;
    CHECK(f::reconnect_delay(1, 20, 200, 0) == 10);
    CHECK(f::reconnect_delay(1, 20, 200, 10) == 20);
    CHECK(f::reconnect_delay(2, 20, 200, 0) == 20);
    CHECK(f::reconnect_delay(30, 20, 200, 0) == 100);
    for (unsigned failures = 0; failures < 40; ++failures) {
        for (std::uint64_t r : {0ULL, 1ULL, 99ULL, ~0ULL}) {
            const auto d = f::reconnect_delay(failures, 20, 200, r);
            CHECK(d <= 200);
            CHECK(d >= 10);
        }
    }
    CHECK(f::reconnect_delay(5, 0, 0, 7) == 0);
}
