#include "transport/node_connection.hpp"

#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "transport/os_random.hpp"
#include "transport/route_ids.hpp"
#include "transport/write_batcher.hpp"

#include <algorithm>
#include <new>
#include <utility>

namespace redlock::detail {

node_connection::node_connection(uv_loop_t* loop, write_batcher& batcher, node_address address,
                                 const client_config& config, random_source& rng,
                                 connection_counters& counters,
                                 std::shared_ptr<const tls_context> tls)
    : loop_{loop},
      batcher_{batcher},
      address_{std::move(address)},
      name_{address_.to_string()},
      report_name_{name_},
      config_{config},
      rng_{rng},
      counters_{counters},
      dialer_{loop, address_, *this},
      fsm_{{loop_ms(config.connect_timeout), loop_ms(config.reconnect.min_delay),
            loop_ms(config.reconnect.max_delay), dialer_.needs_resolver(),
            loop_ms(config.request_timeout)}},
      tls_context_{!address_.is_unix() && address_.tls ? std::move(tls) : nullptr} {
    const auto init = [loop](uv_timer_t* t) { return uv_timer_init(loop, t); };
    if (connect_timer_.open(init) != 0 || deadline_timer_.open(init) != 0) throw std::bad_alloc{};
}

node_connection::~node_connection() {
    batcher_.forget(*this);
    if (route_owner_ != nullptr) route_owner_->forget(route_id_);
}

void node_connection::warn(std::string_view message) {
    log_warning(config_, "redlock: node " + name_ + ": " + std::string{message});
}

void node_connection::subscribe(std::string channel,
                                std::function<void(std::string_view)> on_message) {
    replies_.subscribe(std::move(channel), std::move(on_message));
}

void node_connection::start() {
    dispatch({connection_fsm::event::start});
}

void node_connection::close(std::function<void()> done) {
    // Idempotent: a second close waits for the first, or reports at once.
    if (on_closed_.add(std::move(done))) dispatch({connection_fsm::event::close_requested});
}

// ---- the state machine's actions ---------------------------------------------------------

void node_connection::dispatch(connection_fsm::input in) {
    events_.push_back(std::move(in));
    if (dispatching_) return;  // performed once the current actions are done
    dispatching_ = true;
    while (!events_.empty()) {
        const connection_fsm::input next = std::move(events_.front());
        events_.pop_front();
        connection_fsm::actions a = fsm_.on(next);
        if (perform(a)) return;  // closed: the owner may have destroyed us
    }
    dispatching_ = false;
}

auto node_connection::perform(connection_fsm::actions& a) -> bool {
    if (a.stop_connect_timer && connect_timer_.is_open()) uv_timer_stop(connect_timer_.get());
    if (a.cancel_resolve) dialer_.cancel_resolve();
    if (a.close_stream) {
        const bool closing = stream_.close([](node_connection& self) {
            self.writer_.stream_closed();
            self.dispatch({connection_fsm::event::stream_closed});
        });
        // A stream that could not be opened has nothing to close (queued event).
        if (!closing) dispatch({connection_fsm::event::stream_closed});
        tls_.stop();  // the session dies with its stream
    }
    if (a.close_timers) {
        const auto closed = [](node_connection& self) {
            if (--self.timers_open_ == 0) self.dispatch({connection_fsm::event::timers_closed});
        };
        connect_timer_.close(closed);
        deadline_timer_.close(closed);
    }
    if (a.fail_pending) {
        // Nothing queued for this connection may reach the node any more: what
        // was not written is dropped, and fails below with the others. A stop
        // keeps the cause of the outage before it, which refused requests name.
        if (*a.fail_pending != request_status::stopped) last_error_ = a.cause;
        writer_.drop();
        replies_.reset();
    }
    if (a.resolve) dialer_.resolve();
    if (a.connect_to) connect_to(*a.connect_to);
    if (a.arm_connect_timer_ms) {
        uv_timer_start(
            connect_timer_.get(),
            [](uv_timer_t* t) { timer_handle::owner_of(t).on_connect_timeout(); },
            *a.arm_connect_timer_ms, 0);
    }
    if (a.arm_reconnect_timer_ms) {
        uv_timer_start(
            connect_timer_.get(),
            [](uv_timer_t* t) {
                timer_handle::owner_of(t).dispatch({connection_fsm::event::backoff_elapsed});
            },
            *a.arm_reconnect_timer_ms, 0);
    }
    if (a.start_handshake) start_handshake();
    if (a.release_held) mark_dirty();
    if (a.count_connected) count_connected(*a.count_connected);
    if (!a.warning.empty()) warn(a.warning);
    if (a.fail_pending) fail_requests(*a.fail_pending, a.cause);
    if (a.count_connected == true && on_identified_) on_identified_();
    if (a.notify_closed) {
        events_.clear();
        on_closed_.closed();  // may destroy *this
        return true;
    }
    return false;
}

void node_connection::on_connect_timeout() {
    const bool tls_pending = tls_.active() && !tls_.established();
    dispatch({connection_fsm::event::connect_timeout, fsm_.connect_timeout_cause(tls_pending), 0,
              rng_.next()});
}

void node_connection::on_dialed(connection_fsm::input in) {
    in.random = rng_.next();  // jitters the back-off, should it be a failure
    dispatch(std::move(in));
}

void node_connection::connect_to(std::size_t address) {
    const int rc = stream_.open([this](stream_storage* s) { return dialer_.init_stream(s); });
    if (rc != 0) {
        on_dialed({connection_fsm::event::connect_failed,
                   std::string{"cannot connect: "} + uv_strerror(rc)});
        return;
    }
    dialer_.connect(stream_.get(), address);
}

void node_connection::start_handshake() {
    uv_read_start(stream(), &node_connection::on_alloc, &node_connection::on_read);
    heard_from_server_ = false;
    if (tls_context_) {
        // The ClientHello goes out now; the Redis handshake queued below waits
        // (in the writer) until the TLS handshake is done.
        std::string failure = tls_.start(*tls_context_, address_.host);
        if (!failure.empty()) {
            fail_transport(std::move(failure));
            return;
        }
    }
    // The handshake goes before everything queued while we were connecting;
    // those commands are written only once it is answered (see flush()).
    // Its requests never expire: the connect timer bounds the handshake.
    std::deque<request_fifo::request> requests;
    handshake_sent_ = std::chrono::steady_clock::now();
    writer_.handshake().clear();
    handshake_.begin(config_, replies_.channel(), writer_.handshake(), requests, this, UINT64_MAX);
    pending_.push_front(requests);
    mark_dirty();
}

void node_connection::on_reply(std::uint32_t tag, const reply_event& event) noexcept {
    try {
        const node_handshake::step s = handshake_.on_reply(tag, event);
        if (!s.warning.empty()) warn(s.warning);
        if (!s.tags.empty()) {
            // The handshake's second round. Its first is answered whole, so
            // these go first in the FIFO, before the lock commands held behind
            // the handshake (their bytes wait in the writer until it is done).
            std::deque<request_fifo::request> requests;
            for (const std::uint32_t t : s.tags) {
                requests.push_back(
                    request_fifo::request{.sink = this, .tag = t, .deadline = UINT64_MAX});
            }
            writer_.handshake().append(s.send);
            pending_.push_front(requests);
            mark_dirty();
        }
        if (s.result == node_handshake::verdict::failed && event.status == request_status::reply) {
            dispatch({connection_fsm::event::handshake_failed, s.cause, 0, rng_.next()});
        } else if (s.result == node_handshake::verdict::done) {
            trust_.after_handshake(handshake_.settle_identity(config_), handshake_.node_time(),
                                   handshake_sent_, std::chrono::steady_clock::now());
            dispatch({connection_fsm::event::handshake_ok});
        }
    } catch (...) {
        // Out of memory while reading the handshake: this connection cannot be trusted.
        fail_transport("out of memory in the handshake");
    }
}

void node_connection::count_connected(bool connected) noexcept {
    if (connected == counted_connected_) return;
    counted_connected_ = connected;
    metrics_.up.store(connected, std::memory_order_relaxed);
    if (connected) {
        metrics_.connects.fetch_add(1, std::memory_order_relaxed);
        counters_.connects.fetch_add(1, std::memory_order_relaxed);
        counters_.connected.fetch_add(1, std::memory_order_relaxed);
    } else {
        counters_.connected.fetch_sub(1, std::memory_order_relaxed);
    }
}

void node_connection::fail_requests(request_status status, std::string_view cause) {
    const std::string reason{cause};  // the sinks may change last_error_
    metrics_.drop_sample();
    const std::uint32_t first = pending_.front_number();
    const std::deque<request_fifo::request> all = pending_.take_all();
    for (std::size_t i = 0; i < all.size(); ++i) {
        const request_fifo::request& req = all[i];
        // Expired ones were counted as timeouts already.
        if (req.expired) continue;
        if (status == request_status::unreachable)
            metrics_.unreachable.fetch_add(1, std::memory_order_relaxed);
        hand_on(req.sink, req.tag, pending_.watch_of(req), first + static_cast<std::uint32_t>(i),
                {}, reply_event{status, nullptr, reason});
    }
    if (status == request_status::stopped) refused_.deliver(last_error_);
}

void node_connection::fail_transport(std::string cause) {
    dispatch({connection_fsm::event::transport_error, std::move(cause), 0, rng_.next()});
}

// ---- requests -----------------------------------------------------------------------------

void node_connection::send(std::span<const std::string_view> argv, reply_sink* sink,
                           std::uint32_t tag) {
    send(encoded_command{argv}.bytes(), sink, tag);
}

auto node_connection::queue(std::string_view encoded, reply_sink* sink, std::uint32_t tag,
                            const request_watch* watch) -> std::uint32_t {
    using route = connection_fsm::request_route;
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t now = uv_now(loop_);
    const connection_fsm::request_actions a =
        fsm_.on_request({now, writer_.buffered(), encoded.size(), writer_.idle()});
    if (a.route == route::fail_unreachable || a.route == route::fail_stopped) {
        const bool stopped = a.route == route::fail_stopped;
        refused_.add(sink, tag, stopped ? request_status::stopped : request_status::unreachable,
                     watch != nullptr ? *watch : request_watch{});
        if (!stopped) metrics_.unreachable.fetch_add(1, std::memory_order_relaxed);
        mark_dirty();  // failures are delivered on the next flush, never inside send()
        return no_request;
    }
    if (a.write_buffered_first) writer_.write_eagerly(stream());
    writer_.queue(encoded);
    const auto number = watch == nullptr
                            ? pending_.push(sink, tag, a.deadline)
                            : pending_.push_watched(sink, tag, a.deadline, *watch, encoded);
    if (a.arm_deadline_timer) start_deadline_timer(a.deadline, now);
    if (a.route == route::write) {
        metrics_.on_sent(number, now);  // not while held: the round trip has no connect in it
        mark_dirty();
    }
    return number;
}

auto node_connection::disown(std::uint32_t number, const reply_sink* sink,
                             std::uint32_t mask) noexcept -> bool {
    return number != no_request && pending_.disown(number, sink, mask);
}

void node_connection::mark_dirty() {
    if (dirty_ || fsm_.current() == connection_fsm::state::stopped) return;
    dirty_ = true;
    batcher_.request(*this);  // everything queued this turn leaves in one write
}

void node_connection::on_flush() {
    dirty_ = false;
    writer_.new_turn();
    flush();
    refused_.deliver(last_error_);
}

void node_connection::flush() {
    const auto s = fsm_.current();
    if (s != connection_fsm::state::ready && s != connection_fsm::state::handshaking) return;
    if (!writer_.flush(stream(), s == connection_fsm::state::ready)) write_failed();
}

void node_connection::write_failed() {
    fail_transport(writer_.failure());
}

void node_connection::on_written(int status) {
    if (status == UV_ECANCELED) return;  // the stream is closing
    if (status != 0) {
        fail_transport(std::string{"write failed: "} + uv_strerror(status));
        return;
    }
    flush();
}

// ---- replies ------------------------------------------------------------------------------

void node_connection::on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
    node_connection& self = stream_handle::owner_of(handle);
    *buf = uv_buf_init(self.read_buf_, sizeof self.read_buf_);
}

void node_connection::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t*) {
    node_connection& self = stream_handle::owner_of(stream);
    if (nread > 0) {
        self.heard_from_server_ = true;
        if (self.tls_.active()) {
            self.feed_tls(self.read_buf_, static_cast<std::size_t>(nread));
        } else {
            self.feed(self.read_buf_, static_cast<std::size_t>(nread));
        }
    } else if (nread < 0) {
        std::string cause =
            nread == UV_EOF ? std::string{"connection closed by the server"}
                            : std::string{"read failed: "} + uv_strerror(static_cast<int>(nread));
        // A TLS port drops a plain client at its first command, without a word.
        if (!self.tls_.active() && !self.heard_from_server_ &&
            self.fsm_.current() == connection_fsm::state::handshaking) {
            cause +=
                " before any answer (a TLS port? then give the node TLS: \"tls\" in the config)";
        }
        self.fail_transport(std::move(cause));
    }
}

void node_connection::feed_tls(const char* data, std::size_t len) {
    const std::uint64_t generation = pending_.generation();
    tls_channel::decrypted d = tls_.decrypt(data, len);
    if (!d.plain.empty()) {
        feed(d.plain.data(), d.plain.size());  // copied by the reader at once
        if (generation != pending_.generation() || !tls_.active()) return;  // failed meanwhile
    }
    if (!d.failure.empty()) {
        fail_transport(std::move(d.failure));
    } else if (d.flush) {
        mark_dirty();  // records to send; no flush else: replies' requests ask for theirs
    }
}

// ---- deadlines ----------------------------------------------------------------------------

void node_connection::start_deadline_timer(std::uint64_t deadline, std::uint64_t now) {
    uv_timer_start(
        deadline_timer_.get(), [](uv_timer_t* t) { timer_handle::owner_of(t).on_deadline(); },
        deadline > now ? deadline - now : 0, 0);
}

void node_connection::on_deadline() {
    fsm_.on_deadline_timer();
    const std::uint64_t now = uv_now(loop_);
    const std::uint64_t generation = pending_.generation();
    // Indexes, not iterators: a sink may queue new requests while we walk.
    const std::size_t n = pending_.size();
    for (std::size_t i = 0; i < n && generation == pending_.generation(); ++i) {
        request_fifo::request& req = pending_[i];
        if (req.expired || req.deadline > now) continue;
        req.expired = true;
        counters_.timeouts.fetch_add(1, std::memory_order_relaxed);
        metrics_.timeouts.fetch_add(1, std::memory_order_relaxed);
        if (req.sink != nullptr) {
            const std::string cause =
                "no reply within " + std::to_string(config_.request_timeout.count()) + " ms";
            // A copy: the FIFO may change under the callback.
            const request_fifo::request expired = req;
            hand_on(expired.sink, expired.tag, pending_.watch_of(expired),
                    pending_.front_number() + static_cast<std::uint32_t>(i), {},
                    reply_event{request_status::timeout, nullptr, cause});
        }
    }
    if (generation != pending_.generation()) return;  // failed meanwhile: nothing to watch
    const connection_fsm::expiry_actions a = fsm_.after_expiry(now, pending_);
    if (a.recycle) {
        fail_transport("no reply for " + std::to_string(a.owed_ms) + " ms");
    } else if (a.arm_deadline_timer) {
        start_deadline_timer(a.next, now);
    }
}

}  // namespace redlock::detail
