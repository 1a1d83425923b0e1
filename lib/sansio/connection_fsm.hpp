#pragma once

#include "sansio/delay_policy.hpp"
#include "sansio/request_fifo.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

/// The lifecycle of one node connection, as a pure state machine: events in,
/// actions out, with time and randomness passed in. It performs no I/O; the
/// libuv shell (node_connection) performs its actions in the order their
/// fields are declared, and reports back what libuv tells it as events.
///
/// It also tracks the state of every handle and request the shell owns (the
/// stream, the two timers, the resolver request), so that it never asks for a
/// handle to be closed twice, used while closing, or a request to be reused
/// while in flight. tests/unit/connection_fsm_test.cpp checks every event in
/// every state, connection_fsm_random_test.cpp a timed random interleaving of
/// 100,000s of them, and connection_fsm_request_test.cpp every request path
/// decision.
///
/// Lock commands are written only once the node has answered its whole
/// handshake: a command queued behind a handshake that is never answered (a
/// hung or SIGSTOPped node that the kernel still accepts) is failed unsent,
/// so it cannot reach the node after the client gave up on it.
///
/// The request path is its decision too (on_request): whether a request is
/// written, held for the handshake or failed at once, the deadline it gets,
/// and when the one deadline timer must be armed. on_request is the hot path
/// (every command): inline, no allocation, the time passed in.
class connection_fsm {
public:
    // Commands queued in one loop turn leave together, in one write per this
    // many bytes: at 8 KiB a write still carries 50 to 100 lock commands, and
    // the bytes waiting stay small with a thousand locks in flight (32 KiB
    // cost about 150 bytes per lock in flight; docs/benchmarks.md).
    static constexpr std::size_t eager_write_bytes = 8 * 1024;
    static constexpr std::uint64_t no_deadline = UINT64_MAX;

    enum class state : std::uint8_t {
        idle,         ///< not started
        resolving,    ///< the resolver is looking up the host name
        connecting,   ///< a connect to address_index() is in flight
        handshaking,  ///< connected; the handshake is written, commands are held
        ready,        ///< the handshake was answered: commands flow
        backoff,      ///< failed: waiting for the old stream to close, then to reconnect
        stopping,     ///< close requested: waiting for every handle to close
        stopped,      ///< every handle closed; the owner was told
    };

    enum class event : std::uint8_t {
        start,             ///< begin connecting
        resolved,          ///< the resolver answered with `addresses` (>= 1) addresses
        resolve_failed,    ///< the resolver failed (or was cancelled)
        connect_ok,        ///< the connect in flight succeeded
        connect_failed,    ///< the connect in flight failed: try the next address
        connect_timeout,   ///< the connect timer fired: connect and handshake took too long
        handshake_ok,      ///< the last handshake reply arrived, and none was fatal
        handshake_failed,  ///< a handshake reply was fatal (AUTH refused, still loading)
        transport_error,   ///< peer closed, reset, read/write/protocol error, stale
        stream_closed,     ///< the stream's close callback ran
        backoff_elapsed,   ///< the reconnect timer fired
        close_requested,   ///< the owner closes the connection for good
        timers_closed,     ///< both timers' close callbacks ran
    };

    struct settings {
        std::uint64_t connect_timeout_ms = 0;  ///< covers connect *and* handshake
        std::uint64_t reconnect_min_ms = 0;
        std::uint64_t reconnect_max_ms = 0;
        bool needs_resolver = false;  ///< a host name (not an address, not a socket path)
        std::uint64_t request_timeout_ms = 0;
    };

    struct input {
        event what;
        std::string cause = {};     ///< why, for the failure events
        std::size_t addresses = 0;  ///< resolved: how many addresses to try
        std::uint64_t random = 0;   ///< any random value: jitters the reconnect delay
    };

    /// What the shell does, in this order. Closing and stopping come first,
    /// callbacks into other code (warning, fail_pending, notify_closed) last,
    /// so that code reentering the connection from a callback finds its
    /// handles and state already settled.
    struct actions {
        bool stop_connect_timer = false;
        bool cancel_resolve = false;
        bool close_stream = false;
        bool close_timers = false;
        bool resolve = false;
        std::optional<std::size_t> connect_to;  ///< open a stream, connect to that address
        std::optional<std::uint64_t> arm_connect_timer_ms;
        std::optional<std::uint64_t> arm_reconnect_timer_ms;
        bool start_handshake = false;  ///< start reading; queue and write the handshake
        bool release_held = false;     ///< write the commands held during the handshake
        std::optional<bool> count_connected;
        std::string warning;  ///< a line to log, or empty
        /// Fail every pending request (and drop what was not written) with this.
        std::optional<request_status> fail_pending;
        std::string cause;  ///< the failure's cause, for fail_pending and later sends
        bool notify_closed = false;
    };

    /// What becomes of a request the owner queues (on_request).
    enum class request_route : std::uint8_t {
        write,  ///< queued, written this loop turn: the node answered its handshake
        hold,   ///< queued, written once the handshake is answered (failed unsent if not)
        fail_unreachable,  ///< not queued: the node is down; failed on the next loop turn
        fail_stopped,      ///< not queued: the connection is closing; failed on the next turn
    };

    /// A request about to be queued, and the state of the writer.
    struct request_input {
        std::uint64_t now = 0;           ///< loop milliseconds
        std::size_t buffered_bytes = 0;  ///< commands queued and not yet handed to the kernel
        std::size_t request_bytes = 0;   ///< this request, encoded
        bool writer_idle = false;  ///< no write in flight, and the kernel took this turn's last
    };

    /// What the shell does with it, in this order.
    struct request_actions {
        request_route route;
        /// Hand what is buffered to the kernel before queueing this one: a
        /// burst leaves as it grows, so the bytes waiting stay within a write.
        bool write_buffered_first;
        bool arm_deadline_timer;  ///< (re)arm the deadline timer for `deadline`
        std::uint64_t deadline;   ///< when the request times out, loop ms (queued routes)
    };

    explicit connection_fsm(settings s) noexcept : settings_{s} {}

    [[nodiscard]] auto on(const input& in) -> actions;

    /// The owner queues a request (see request_route).
    [[nodiscard]] auto on_request(const request_input& r) noexcept -> request_actions {
        if (state_ > state::ready) {
            return {stopping() ? request_route::fail_stopped : request_route::fail_unreachable,
                    false, false, 0};
        }
        const bool is_ready = state_ == state::ready;
        // Queued while connecting, a request also waits for the connection
        // (and its handshake): a fresh client's first attempt is not lost to
        // the connect time. Its deadline allows for a whole connect timeout,
        // which bounds connect and handshake together: if the node does not
        // answer by then, the request fails as unreachable, never written.
        const std::uint64_t deadline =
            r.now + settings_.request_timeout_ms + (is_ready ? 0 : settings_.connect_timeout_ms);
        const bool arm = deadline < deadline_armed_;  // up to ready: the timers are open
        if (arm) deadline_armed_ = deadline;
        return {is_ready ? request_route::write : request_route::hold,
                is_ready && r.writer_idle && r.buffered_bytes > 0 &&
                    r.buffered_bytes + r.request_bytes > eager_write_bytes,
                arm, deadline};
    }
    /// The deadline timer fired: it is no longer armed. The shell expires
    /// each request whose deadline has passed, then asks after_expiry().
    void on_deadline_timer() noexcept { deadline_armed_ = no_deadline; }

    /// What follows the expiries of a deadline timer.
    struct expiry_actions {
        /// The oldest request has owed its reply for stale_after_ms() past its
        /// deadline: the node is not coming back on this connection, drop it.
        bool recycle;
        std::uint64_t owed_ms;    ///< how long past its deadline it is (recycle)
        bool arm_deadline_timer;  ///< (re)arm the deadline timer for `next`
        std::uint64_t next;       ///< the next deadline to watch, or no_deadline
    };
    /// `pending` after the expiries, at loop time `now`.
    [[nodiscard]] auto after_expiry(std::uint64_t now, const request_fifo& pending) noexcept
        -> expiry_actions;
    /// Why the connect timer fired, for connect_timeout's cause: the TLS
    /// handshake, the node's handshake, or the connect did not finish in time.
    [[nodiscard]] auto connect_timeout_cause(bool tls_handshake_pending) const -> std::string;
    /// When the deadline timer is due (no_deadline: idle).
    [[nodiscard]] auto deadline_armed() const noexcept -> std::uint64_t { return deadline_armed_; }
    /// How long past its deadline a reply may be owed before after_expiry()
    /// recycles the connection: much longer than any lock lives.
    [[nodiscard]] auto stale_after_ms() const noexcept -> std::uint64_t {
        return std::max<std::uint64_t>(2000, 20 * settings_.request_timeout_ms);
    }

    [[nodiscard]] auto current() const noexcept -> state { return state_; }
    /// Commands may be written (the node answered its handshake).
    [[nodiscard]] auto ready() const noexcept -> bool { return state_ == state::ready; }
    [[nodiscard]] auto stopping() const noexcept -> bool { return state_ >= state::stopping; }
    [[nodiscard]] auto address_index() const noexcept -> std::size_t { return address_; }
    /// Consecutive failed connection attempts (for the back-off).
    [[nodiscard]] auto failures() const noexcept -> unsigned { return failures_; }
    /// The first connection is still under way: never ready, never failed, not stopping.
    /// An acquisition waits a little for such a node (acquire_settling.cpp).
    [[nodiscard]] auto settling() const noexcept -> bool {
        return !ever_ready_ && failures_ == 0 && state_ < state::ready;
    }

    /// The reconnect delay after `failures` consecutive failures (delay_policy.hpp).
    [[nodiscard]] static auto reconnect_delay(unsigned failures, std::uint64_t min_ms,
                                              std::uint64_t max_ms, std::uint64_t random) noexcept
        -> std::uint64_t {
        return detail::reconnect_delay(failures, min_ms, max_ms, random);
    }

private:
    enum class stream_state : std::uint8_t { none, open, closing };
    enum class resolver_state : std::uint8_t { idle, busy, cancelling };

    /// The earliest deadline left to watch is `deadline`: true if the timer
    /// must be (re)armed for it (it is idle, or armed for later). Never while
    /// the timers close.
    [[nodiscard]] auto arm_deadline_timer(std::uint64_t deadline) noexcept -> bool {
        if (deadline >= deadline_armed_ || stopping()) return false;
        deadline_armed_ = deadline;
        return true;
    }
    void begin_connect(actions& a);
    void fail(actions& a, std::string_view cause, std::uint64_t random);
    void stop(actions& a);
    void maybe_stopped(actions& a);
    void close_stream(actions& a);

    settings settings_;
    state state_ = state::idle;
    stream_state stream_ = stream_state::none;
    resolver_state resolver_ = resolver_state::idle;
    bool timers_closed_ = false;
    bool resolve_wanted_ = false;         // a look-up waits for the cancelled one to return
    bool connect_after_close_ = false;    // the next address waits for the old stream
    bool reconnect_after_close_ = false;  // the back-off timer waits for the old stream
    std::uint64_t pending_random_ = 0;
    std::size_t address_ = 0;
    std::size_t addresses_ = 1;
    unsigned failures_ = 0;
    bool ever_ready_ = false;       // the handshake was answered once
    bool outage_reported_ = false;  // "unreachable" was logged; "connected again" is due
    std::uint64_t deadline_armed_ = no_deadline;  // when the deadline timer is due
};

[[nodiscard]] auto to_string(connection_fsm::state s) noexcept -> const char*;
[[nodiscard]] auto to_string(connection_fsm::event e) noexcept -> const char*;

}  // namespace redlock::detail
