// A seeded random interleaving of everything that can happen to a node
// connection — connects that succeed or fail, resolver answers, handshakes,
// resets, timers, close callbacks, requests, replies, timeouts, and the owner
// closing it at any moment — checked against the handle model. Time passes in
// steps, and the timers fire in the order they are due, as libuv fires them.
// At least 100,000 steps per seed; the seed of a failing run is printed.

#include "connection_fsm_model.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

namespace {

using redlock::detail::connection_fsm;
using redlock_test::shell_model;
using ev = connection_fsm::event;
using st = connection_fsm::state;

struct run_totals {
    long steps = 0;
    long lives = 0;
    long requests = 0;
    long readies = 0;
    long timeouts = 0;
    long recycles = 0;
};

/// Lets time pass until `until`, firing every timer due by then in the order
/// they are due. On a tie the connect timer goes first: it was started first
/// (a request held behind a connect is queued after it).
void pass_time(shell_model& m, std::uint64_t until, std::mt19937_64& rng) {
    for (;;) {
        const bool connect_timer =
            m.timers == shell_model::timer::connect || m.timers == shell_model::timer::reconnect;
        const std::uint64_t timer = connect_timer ? m.timer_due : connection_fsm::no_deadline;
        const std::uint64_t due = std::min(timer, m.deadline_due);
        if (due > until) break;
        m.now = std::max(m.now, due);
        if (timer == due) {
            const bool reconnect = m.timers == shell_model::timer::reconnect;
            m.timers = shell_model::timer::idle;
            if (reconnect) {
                m.feed({ev::backoff_elapsed});
            } else {
                m.feed({ev::connect_timeout, "timeout", 0, rng()});
            }
        } else {
            m.deadline_timer_fires();
        }
    }
    m.now = std::max(m.now, until);
}

/// One connection's life, from start to its close notification.
void live_once(std::mt19937_64& rng, run_totals& totals, long max_steps) {
    const bool needs_resolver = (rng() & 1) != 0;
    shell_model m{connection_fsm::settings{100, 20, 200, needs_resolver, 50}};
    std::uint32_t next_tag = 0;
    bool close_asked = false;
    m.feed({ev::start});
    const auto pick = [&](unsigned n) { return static_cast<unsigned>(rng() % n); };
    for (long step = 0; step < max_steps && !m.closed_notified; ++step) {
        ++totals.steps;
        // Late in a life, or at random, the owner closes the connection.
        if (!close_asked && (pick(400) == 0 || step + 50 >= max_steps)) {
            close_asked = true;
            m.feed({ev::close_requested});
            continue;
        }
        switch (pick(12)) {
            case 0:
                m.send(next_tag++);
                ++totals.requests;
                break;
            case 1:
                if (m.resolver_busy) {
                    m.resolver_busy = false;
                    const auto n = pick(4);
                    m.feed({n > 0 ? ev::resolved : ev::resolve_failed, "lookup", n, rng()});
                }
                break;
            case 2:
                if (m.connecting) {
                    m.connecting = false;
                    const bool ok = pick(3) != 0;
                    m.feed({ok ? ev::connect_ok : ev::connect_failed, "refused", 0, rng()});
                }
                break;
            case 3:
                if (m.stream == shell_model::handle::closing) {
                    m.stream = shell_model::handle::none;
                    m.connecting = false;
                    m.feed({ev::stream_closed});
                }
                break;
            case 4:
                if (m.timers == shell_model::timer::closing) {
                    m.timers = shell_model::timer::closed;
                    m.feed({ev::timers_closed});
                }
                break;
            case 5:
                // Mostly a few milliseconds, sometimes past every timer.
                pass_time(m, m.now + (pick(4) == 0 ? 3000 : pick(40)), rng);
                break;
            case 6:
                if (m.handshake_sent && m.fsm.current() == st::handshaking) {
                    const bool ok = pick(4) != 0;
                    m.feed({ok ? ev::handshake_ok : ev::handshake_failed, "AUTH", 0, rng()});
                    if (m.fsm.ready()) ++totals.readies;
                }
                break;
            case 7:
                if (m.stream == shell_model::handle::open && !m.connecting && pick(3) == 0) {
                    m.feed({ev::transport_error, "reset", 0, rng()});
                }
                break;
            case 8:
            case 9:
                m.reply();
                break;
            case 10:
                // Just to the next timer (or a little on).
                pass_time(m, std::min(m.deadline_due, m.timer_due) + pick(2), rng);
                break;
            default: {
                // Stale or duplicate events the shell may pass on: they must change nothing
                // that the model would see as a broken handle.
                const st now = m.fsm.current();
                if (pick(2) == 0) {
                    m.feed({ev::start});
                } else if (now != st::handshaking) {
                    m.feed({pick(2) == 0 ? ev::handshake_ok : ev::handshake_failed, "stale"});
                } else if (now != st::backoff) {
                    m.feed({ev::backoff_elapsed});
                }
                break;
            }
        }
    }
    // The owner closes; the world completes what is in flight.
    m.feed({ev::close_requested});
    for (int i = 0; i < 4 && !m.closed_notified; ++i) {
        if (m.resolver_busy) {
            m.resolver_busy = false;
            m.feed({ev::resolve_failed, "cancelled"});
        }
        if (m.stream == shell_model::handle::closing) {
            m.stream = shell_model::handle::none;
            m.connecting = false;
            m.feed({ev::stream_closed});
        }
        if (m.timers == shell_model::timer::closing) {
            m.timers = shell_model::timer::closed;
            m.feed({ev::timers_closed});
        }
    }
    totals.timeouts += m.timeouts;
    totals.recycles += m.recycles;
    REQUIRE(m.closed_notified);
    CHECK(m.close_notifications == 1);
    CHECK(m.fsm.current() == st::stopped);
    // No request lost, none answered twice.
    for (std::uint32_t tag = 0; tag < next_tag; ++tag) {
        CAPTURE(tag);
        REQUIRE(m.sink.outcomes[tag] == 1);
    }
    // After the close, nothing happens whatever the world says.
    for (int e = 0; e < 13; ++e) {
        const auto a = m.feed({static_cast<ev>(e), "late", 1, 0});
        REQUIRE(shell_model::empty(a));
    }
    ++totals.lives;
}

}  // namespace

TEST_CASE("connection_fsm: random interleavings close every handle once and lose no request") {
    std::uint64_t seeds[] = {1, 2, 3, 20261123, 0xdeadbeef};
    if (const char* s = std::getenv("REDLOCK_FSM_SEED")) seeds[0] = std::strtoull(s, nullptr, 0);
    for (const std::uint64_t seed : seeds) {
        CAPTURE(seed);
        std::mt19937_64 rng{seed};
        run_totals totals;
        while (totals.steps < 100'000) live_once(rng, totals, 50 + static_cast<long>(rng() % 3000));
        MESSAGE("seed " << seed << ": " << totals.steps << " steps, " << totals.lives
                        << " connections, " << totals.requests << " requests, " << totals.readies
                        << " handshakes answered, " << totals.timeouts << " timeouts, "
                        << totals.recycles << " stale connections recycled");
        CHECK(totals.readies > 100);  // the interleaving does reach the ready state
        CHECK(totals.timeouts > 40);  // requests do time out (64 to 102 with these seeds)
        CHECK(totals.recycles > 0);
    }
}
