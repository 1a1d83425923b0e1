#include "sansio/connection_fsm.hpp"

#include <algorithm>

namespace redlock::detail {

auto connection_fsm::on(const input& in) -> actions {
    actions a;
    switch (in.what) {
        case event::start:
            if (state_ == state::idle) begin_connect(a);
            break;

        case event::resolved:
        case event::resolve_failed:
            if (resolver_ == resolver_state::cancelling) {
                // The answer to a look-up we gave up on: nothing to learn from it.
                resolver_ = resolver_state::idle;
                if (resolve_wanted_ && state_ == state::resolving) {
                    resolve_wanted_ = false;
                    resolver_ = resolver_state::busy;
                    a.resolve = true;
                }
                maybe_stopped(a);
                break;
            }
            if (resolver_ != resolver_state::busy) break;  // not ours: ignore
            resolver_ = resolver_state::idle;
            if (state_ != state::resolving) {
                maybe_stopped(a);
                break;
            }
            if (in.what == event::resolve_failed || in.addresses == 0) {
                fail(a, in.cause, in.random);
                break;
            }
            addresses_ = in.addresses;
            address_ = 0;
            state_ = state::connecting;
            stream_ = stream_state::open;
            a.connect_to = address_;
            break;

        case event::connect_ok:
            if (state_ != state::connecting || stream_ != stream_state::open) break;
            // The connect timer keeps running: it bounds connect and handshake together, so
            // that a request queued while connecting (whose deadline allows for one connect
            // timeout) fails as unreachable, unsent, before it could expire held back.
            state_ = state::handshaking;
            a.start_handshake = true;
            break;

        case event::connect_failed:
            if (state_ != state::connecting || stream_ != stream_state::open) break;
            if (address_ + 1 < addresses_) {
                // The next address, as redis-cli does ("localhost" is ::1 first on
                // Debian, and a server may listen on 127.0.0.1 only), within the same timer.
                ++address_;
                connect_after_close_ = true;
                close_stream(a);
                break;
            }
            fail(a, in.cause, in.random);
            break;

        case event::connect_timeout:
            if (state_ == state::resolving || state_ == state::connecting ||
                state_ == state::handshaking) {
                fail(a, in.cause, in.random);
            }
            break;

        case event::handshake_ok:
            if (state_ != state::handshaking) break;
            state_ = state::ready;
            failures_ = 0;
            ever_ready_ = true;
            a.stop_connect_timer = true;
            a.release_held = true;
            a.count_connected = true;
            if (outage_reported_) {
                outage_reported_ = false;
                a.warning = "connected again";
            }
            break;

        case event::handshake_failed:
        case event::transport_error:
            // A handshake verdict only counts during the handshake; a transport
            // error fails whatever is pending in any live state (the read path may
            // be fed directly: fuzz targets, tests).
            if (state_ == state::handshaking || state_ == state::ready ||
                (in.what == event::transport_error && state_ < state::handshaking)) {
                fail(a, in.cause, in.random);
            }
            break;

        case event::stream_closed:
            if (stream_ != stream_state::closing) break;
            stream_ = stream_state::none;
            if (connect_after_close_) {
                connect_after_close_ = false;
                if (state_ == state::connecting) {
                    stream_ = stream_state::open;
                    a.connect_to = address_;
                }
            }
            if (reconnect_after_close_) {
                reconnect_after_close_ = false;
                if (state_ == state::backoff) {
                    a.arm_reconnect_timer_ms =
                        reconnect_delay(failures_, settings_.reconnect_min_ms,
                                        settings_.reconnect_max_ms, pending_random_);
                }
            }
            maybe_stopped(a);
            break;

        case event::backoff_elapsed:
            if (state_ == state::backoff && stream_ == stream_state::none) begin_connect(a);
            break;

        case event::close_requested:
            if (state_ != state::stopping && state_ != state::stopped) stop(a);
            break;

        case event::timers_closed:
            if (state_ != state::stopping || timers_closed_) break;
            timers_closed_ = true;
            maybe_stopped(a);
            break;
    }
    return a;
}

void connection_fsm::begin_connect(actions& a) {
    a.arm_connect_timer_ms = settings_.connect_timeout_ms;
    address_ = 0;
    if (!settings_.needs_resolver) {
        addresses_ = 1;
        state_ = state::connecting;
        stream_ = stream_state::open;
        a.connect_to = address_;
        return;
    }
    state_ = state::resolving;
    if (resolver_ == resolver_state::idle) {
        resolver_ = resolver_state::busy;
        a.resolve = true;
    } else {
        resolve_wanted_ = true;  // the request is still in flight: reuse it once it returns
    }
}

void connection_fsm::close_stream(actions& a) {
    if (stream_ != stream_state::open) return;
    stream_ = stream_state::closing;
    a.close_stream = true;
}

void connection_fsm::fail(actions& a, std::string_view cause, std::uint64_t random) {
    const bool was_ready = state_ == state::ready;
    state_ = state::backoff;
    ++failures_;
    connect_after_close_ = false;
    resolve_wanted_ = false;
    a.stop_connect_timer = true;
    if (resolver_ == resolver_state::busy) {
        resolver_ = resolver_state::cancelling;
        a.cancel_resolve = true;
    }
    close_stream(a);
    a.count_connected = false;
    // Once per outage: a node that stays down is not announced at every retry.
    if (!outage_reported_ || was_ready) {
        outage_reported_ = true;
        a.warning = "unreachable: " + std::string{cause};
    }
    a.fail_pending = request_status::unreachable;
    a.cause = std::string{cause};
    if (stream_ == stream_state::none) {
        a.arm_reconnect_timer_ms = reconnect_delay(failures_, settings_.reconnect_min_ms,
                                                   settings_.reconnect_max_ms, random);
    } else {
        reconnect_after_close_ = true;  // a new stream only once the old one is closed
        pending_random_ = random;
    }
}

void connection_fsm::stop(actions& a) {
    state_ = state::stopping;
    connect_after_close_ = false;
    reconnect_after_close_ = false;
    resolve_wanted_ = false;
    a.stop_connect_timer = true;
    a.close_timers = true;
    deadline_armed_ = no_deadline;  // closed with the others: it never fires again
    if (resolver_ == resolver_state::busy) {
        resolver_ = resolver_state::cancelling;
        a.cancel_resolve = true;
    }
    close_stream(a);
    a.count_connected = false;
    a.fail_pending = request_status::stopped;
    a.cause = "client stopped";
}

void connection_fsm::maybe_stopped(actions& a) {
    if (state_ != state::stopping || !timers_closed_ || stream_ != stream_state::none ||
        resolver_ != resolver_state::idle) {
        return;
    }
    state_ = state::stopped;
    a.notify_closed = true;
}

auto connection_fsm::after_expiry(std::uint64_t now, const request_fifo& pending) noexcept
    -> expiry_actions {
    if (stopping()) return {false, 0, false, no_deadline};
    const bool owing = !pending.empty() && pending.front().expired;
    if (owing && now >= pending.front().deadline + stale_after_ms()) {
        return {true, now - pending.front().deadline, false, no_deadline};
    }
    std::uint64_t next = owing ? now + stale_after_ms() : no_deadline;
    for (std::size_t i = 0; i < pending.size(); ++i) {
        if (!pending[i].expired) next = std::min(next, pending[i].deadline);
    }
    const bool arm = next != no_deadline && arm_deadline_timer(next);
    return {false, 0, arm, next};
}

auto connection_fsm::connect_timeout_cause(bool tls_handshake_pending) const -> std::string {
    const std::string limit = std::to_string(settings_.connect_timeout_ms);
    if (state_ == state::handshaking && tls_handshake_pending) {
        return "TLS handshake timeout: not done within the connect timeout (" + limit +
               " ms; a stalled server, or a plain port that does not speak TLS)";
    }
    if (state_ == state::handshaking) {
        return "no answer to the handshake within the connect timeout (" + limit + " ms)";
    }
    return "connect timeout after " + limit + " ms";
}

auto to_string(connection_fsm::state s) noexcept -> const char* {
    using st = connection_fsm::state;
    switch (s) {
        case st::idle:
            return "idle";
        case st::resolving:
            return "resolving";
        case st::connecting:
            return "connecting";
        case st::handshaking:
            return "handshaking";
        case st::ready:
            return "ready";
        case st::backoff:
            return "backoff";
        case st::stopping:
            return "stopping";
        case st::stopped:
            return "stopped";
    }
    return "?";
}

auto to_string(connection_fsm::event e) noexcept -> const char* {
    using ev = connection_fsm::event;
    switch (e) {
        case ev::start:
            return "start";
        case ev::resolved:
            return "resolved";
        case ev::resolve_failed:
            return "resolve_failed";
        case ev::connect_ok:
            return "connect_ok";
        case ev::connect_failed:
            return "connect_failed";
        case ev::connect_timeout:
            return "connect_timeout";
        case ev::handshake_ok:
            return "handshake_ok";
        case ev::handshake_failed:
            return "handshake_failed";
        case ev::transport_error:
            return "transport_error";
        case ev::stream_closed:
            return "stream_closed";
        case ev::backoff_elapsed:
            return "backoff_elapsed";
        case ev::close_requested:
            return "close_requested";
        case ev::timers_closed:
            return "timers_closed";
    }
    return "?";
}

}  // namespace redlock::detail
