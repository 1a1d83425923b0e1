// The request path's decisions in connection_fsm, without sockets: the route
// of a request (written, held for the handshake, refused), the deadline it
// gets, when the one deadline timer is armed, the eager write of a burst, and
// what follows the timer's expiries (re-arm, or recycle a stale connection).
// Every case is enumerated and checked against the rule written out here.

#include "connection_fsm_model.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using redlock::detail::connection_fsm;
using redlock::detail::request_fifo;
using redlock_test::shell_model;
using route = connection_fsm::request_route;
using st = connection_fsm::state;

constexpr std::uint64_t connect_ms = 100;
constexpr std::uint64_t request_ms = 30;
constexpr std::size_t batch = connection_fsm::eager_write_bytes;
constexpr std::uint64_t none = connection_fsm::no_deadline;

constexpr std::array states{st::idle,  st::resolving, st::connecting, st::handshaking,
                            st::ready, st::backoff,   st::stopping,   st::stopped};

auto settings_for(bool named) -> connection_fsm::settings {
    return {connect_ms, 20, 200, named, request_ms};
}

/// A machine in `target` whose deadline timer is due at `armed` (none: idle).
auto machine_in(st target, bool named, std::uint64_t armed) -> shell_model {
    shell_model m{settings_for(named)};
    if (armed != none) {
        // A request queued while idle arms it: its deadline allows for a connect.
        const auto a = m.fsm.on_request({armed - request_ms - connect_ms, 0, 1, true});
        REQUIRE(a.arm_deadline_timer);
        REQUIRE(a.deadline == armed);
    }
    redlock_test::drive_to(m, target);
    // Closing the timers disarms it for good.
    REQUIRE(m.fsm.deadline_armed() == (target >= st::stopping ? none : armed));
    return m;
}

}  // namespace

TEST_CASE("connection_fsm: every request in every state gets the route, deadline and timer due") {
    constexpr std::uint64_t now = 50'000;
    const std::vector<std::size_t> buffered{0,          1,     batch - 41, batch - 40,
                                            batch - 39, batch, batch + 1};
    long cases = 0;
    for (const bool named : {false, true}) {
        for (const st s : states) {
            const bool up = s <= st::ready;
            const std::uint64_t deadline =
                now + request_ms + (s == st::ready ? 0 : connect_ms);  // the rule, for arming
            for (const std::uint64_t armed : {none, deadline - 1, deadline, deadline + 1}) {
                for (const bool idle : {false, true}) {
                    for (const std::size_t queued : buffered) {
                        for (const std::size_t bytes : {std::size_t{1}, std::size_t{40}}) {
                            const std::string state = to_string(s);
                            CAPTURE(state);
                            CAPTURE(named);
                            CAPTURE(armed);
                            CAPTURE(idle);
                            CAPTURE(queued);
                            CAPTURE(bytes);
                            shell_model m = machine_in(s, named, armed);
                            const auto a = m.fsm.on_request({now, queued, bytes, idle});
                            ++cases;
                            // Up to ready it is queued: written when ready, else held for the
                            // handshake. Backing off it is refused as unreachable; closing,
                            // as stopped.
                            const route expected = s == st::ready     ? route::write
                                                   : up               ? route::hold
                                                   : s == st::backoff ? route::fail_unreachable
                                                                      : route::fail_stopped;
                            CHECK(a.route == expected);
                            // Only a ready connection's burst goes early, and only when the
                            // writer is idle and the batch would overflow.
                            CHECK(a.write_buffered_first ==
                                  (s == st::ready && idle && queued > 0 && queued + bytes > batch));
                            if (!up) {
                                CHECK_FALSE(a.arm_deadline_timer);
                                CHECK(m.fsm.deadline_armed() == (s == st::backoff ? armed : none));
                                continue;
                            }
                            CHECK(a.deadline == deadline);
                            // Armed when idle or due later than this deadline; never moved later.
                            CHECK(a.arm_deadline_timer == (deadline < armed));
                            CHECK(m.fsm.deadline_armed() == std::min(armed, deadline));
                        }
                    }
                }
            }
        }
    }
    CHECK(cases == 2 * 8 * 4 * 2 * 7 * 2);
}

TEST_CASE("connection_fsm: a held request's deadline outlasts the connect timer that bounds it") {
    // Queued at any moment of a connect attempt, a request must be failed by the connect
    // timer (unreachable, unsent) rather than time out held back (item 2 of issue 12).
    for (const bool named : {false, true}) {
        for (std::uint64_t at = 0; at <= connect_ms; ++at) {
            shell_model m{settings_for(named)};
            m.feed({connection_fsm::event::start});
            const std::uint64_t connect_due = m.now + connect_ms;
            const auto a = m.fsm.on_request({m.now + at, 0, 40, true});
            CHECK(a.route == route::hold);
            CHECK(a.deadline > connect_due);
        }
    }
}

TEST_CASE("connection_fsm: the deadline timer is never armed once the timers close") {
    shell_model m{settings_for(false)};
    redlock_test::drive_to(m, st::ready);
    m.feed({connection_fsm::event::close_requested});  // timers closing
    request_fifo pending;
    pending.push(nullptr, 1, 10);
    m.fsm.on_deadline_timer();
    const auto a = m.fsm.after_expiry(5, pending);
    CHECK_FALSE(a.arm_deadline_timer);
    CHECK_FALSE(a.recycle);
    CHECK(m.fsm.on_request({5, 0, 1, true}).route == route::fail_stopped);
    CHECK(m.fsm.deadline_armed() == none);
}

TEST_CASE(
    "connection_fsm: after every set of expiries, the timer is re-armed or the node recycled") {
    constexpr std::uint64_t now = 100'000;
    shell_model probe{settings_for(false)};
    const std::uint64_t stale = probe.fsm.stale_after_ms();
    REQUIRE(stale == 2000);  // max(2000 ms, 20 request timeouts)
    const std::array<std::uint64_t, 6> deadlines{now - stale - 1, now - stale, now - 1, now,
                                                 now + 1,         now + 5};
    // Each request: a deadline, expired or not (12 kinds); FIFOs of 0 to 3 requests.
    std::vector<std::vector<int>> fifos{{}};
    for (std::size_t length = 1; length <= 3; ++length) {
        const std::size_t before = fifos.size();
        for (std::size_t f = 0; f < before; ++f) {
            if (fifos[f].size() != length - 1) continue;
            for (int kind = 0; kind < 12; ++kind) {
                auto longer = fifos[f];
                longer.push_back(kind);
                fifos.push_back(longer);
            }
        }
    }
    REQUIRE(fifos.size() == 1 + 12 + 144 + 1728);
    long cases = 0;
    for (const st s : {st::ready, st::handshaking, st::backoff, st::stopping}) {
        for (const auto& kinds : fifos) {
            request_fifo pending;
            for (const int kind : kinds) {
                pending.push(nullptr, 0, deadlines[static_cast<std::size_t>(kind / 2)]);
                pending[pending.size() - 1].expired = kind % 2 == 1;
            }
            // The rule: a stale front recycles; otherwise the earliest deadline still
            // waiting, or when a front owing its reply turns stale.
            const bool owing = !pending.empty() && pending.front().expired;
            const bool recycle =
                s != st::stopping && owing && now >= pending.front().deadline + stale;
            std::uint64_t next = owing ? now + stale : none;
            for (std::size_t i = 0; i < pending.size(); ++i) {
                if (!pending[i].expired) next = std::min(next, pending[i].deadline);
            }
            // The timer idle, or due before, at or after the next deadline.
            const std::vector<std::uint64_t> timer =
                next == none ? std::vector<std::uint64_t>{none, now + 7}
                             : std::vector<std::uint64_t>{none, next - 1, next, next + 1};
            for (const std::uint64_t armed : timer) {
                const std::string state = to_string(s);
                CAPTURE(state);
                CAPTURE(kinds.size());
                CAPTURE(armed);
                shell_model m{settings_for(false)};
                if (armed != none) {
                    REQUIRE(m.fsm.on_request({armed - request_ms - connect_ms, 0, 1, true})
                                .arm_deadline_timer);
                }
                redlock_test::drive_to(m, s);
                const auto a = m.fsm.after_expiry(now, pending);
                ++cases;
                CHECK(a.recycle == recycle);
                if (recycle) {
                    CHECK(a.owed_ms == now - pending.front().deadline);
                    CHECK_FALSE(a.arm_deadline_timer);
                    continue;
                }
                const bool arm = s != st::stopping && next != none && next < armed;
                CHECK(a.arm_deadline_timer == arm);
                if (arm) CHECK(a.next == next);
                const std::uint64_t idle = s == st::stopping ? none : armed;
                CHECK(m.fsm.deadline_armed() == (arm ? next : idle));
            }
        }
    }
    CHECK(cases == 4 * (2 + 1884 * 4));  // only the empty FIFO has no next deadline
}

TEST_CASE("connection_fsm: a connect timeout says what did not finish in time") {
    for (const st s : states) {
        for (const bool tls_pending : {false, true}) {
            const std::string state = to_string(s);
            CAPTURE(state);
            CAPTURE(tls_pending);
            shell_model m{settings_for(false)};
            redlock_test::drive_to(m, s);
            const std::string cause = m.fsm.connect_timeout_cause(tls_pending);
            if (s == st::handshaking && tls_pending) {
                CHECK(cause ==
                      "TLS handshake timeout: not done within the connect timeout (100 ms; a "
                      "stalled server, or a plain port that does not speak TLS)");
            } else if (s == st::handshaking) {
                CHECK(cause == "no answer to the handshake within the connect timeout (100 ms)");
            } else {
                CHECK(cause == "connect timeout after 100 ms");
            }
        }
    }
}
