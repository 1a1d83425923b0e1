#include "transport/node_connection.hpp"

#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "transport/write_batcher.hpp"
#include "transport/os_random.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

namespace redlock::detail {
namespace {

/// A host given as an address (or a Unix socket path) needs no resolver.
auto numeric_address(const node_address& a, sockaddr_storage& out) -> bool {
    return uv_ip4_addr(a.host.c_str(), a.port, reinterpret_cast<sockaddr_in*>(&out)) == 0 ||
           uv_ip6_addr(a.host.c_str(), a.port, reinterpret_cast<sockaddr_in6*>(&out)) == 0;
}

auto fsm_settings(const node_address& address, const client_config& config)
    -> connection_fsm::settings {
    sockaddr_storage numeric{};
    return connection_fsm::settings{loop_ms(config.connect_timeout),
                                    loop_ms(config.reconnect.min_delay),
                                    loop_ms(config.reconnect.max_delay),
                                    !address.is_unix() && !numeric_address(address, numeric)};
}

}  // namespace

node_connection::node_connection(uv_loop_t* loop, flush_hooks& hooks, node_address address,
                                 const client_config& config, random_source& rng,
                                 connection_counters& counters,
                                 std::shared_ptr<const tls_context> tls)
    : loop_{loop},
      hooks_{hooks},
      address_{std::move(address)},
      name_{address_.to_string()},
      config_{config},
      rng_{rng},
      counters_{counters},
      fsm_{fsm_settings(address_, config_)},
      tls_context_{!address_.is_unix() && address_.tls ? std::move(tls) : nullptr} {
    uv_timer_init(loop_, &connect_timer_);
    uv_timer_init(loop_, &deadline_timer_);
    connect_timer_.data = this;
    deadline_timer_.data = this;
    if (!address_.is_unix()) {
        sockaddr_storage numeric{};
        if (numeric_address(address_, numeric)) addresses_.push_back(numeric);
    }
}

node_connection::~node_connection() {
    hooks_.forget(*this);
}

auto node_connection::stream() noexcept -> uv_stream_t* {
    return reinterpret_cast<uv_stream_t*>(&stream_);
}

void node_connection::warn(std::string_view message) {
    log_warning(config_, "redlock: node " + name_ + ": " + std::string{message});
}

void node_connection::subscribe(std::string channel,
                                std::function<void(std::string_view)> on_message) {
    channel_ = std::move(channel);
    on_message_ = std::move(on_message);
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
    events_.push_back(in);
    if (dispatching_) return;  // performed once the current actions are done
    dispatching_ = true;
    while (!events_.empty()) {
        const connection_fsm::input next = events_.front();
        events_.pop_front();
        connection_fsm::actions a = fsm_.on(next);
        if (perform(a)) return;  // closed: the owner may have destroyed us
    }
    dispatching_ = false;
}

auto node_connection::perform(connection_fsm::actions& a) -> bool {
    if (a.stop_connect_timer) uv_timer_stop(&connect_timer_);
    if (a.cancel_resolve) uv_cancel(reinterpret_cast<uv_req_t*>(&resolve_req_));
    if (a.close_stream) {
        uv_close(as_uv_handle(stream()), [](uv_handle_t* h) {
            auto& self = *static_cast<node_connection*>(h->data);
            self.writing_ = false;
            self.writing_buf_.clear();
            self.dispatch({connection_fsm::event::stream_closed});
        });
        // The session dies with its stream (callers of dispatch touch it no more).
        tls_.reset();
        tls_wire_.clear();
    }
    if (a.close_timers) {
        const auto closed = [](uv_handle_t* h) {
            auto& self = *static_cast<node_connection*>(h->data);
            if (--self.timers_open_ == 0) self.dispatch({connection_fsm::event::timers_closed});
        };
        uv_close(as_uv_handle(&connect_timer_), closed);
        uv_close(as_uv_handle(&deadline_timer_), closed);
    }
    if (a.fail_pending) {
        // Nothing queued for this connection may reach the node any more: what
        // was not written is dropped, and fails below with the others.
        ++epoch_;
        // Kept for the requests sent while down; a stop keeps the cause of the
        // outage before it, which failures still to be delivered name.
        if (*a.fail_pending != request_status::stopped) last_error_ = a.cause;
        out_.clear();
        handshake_out_.clear();
        reader_.reset();
    }
    if (a.resolve) resolve();
    if (a.connect_to) connect_to(*a.connect_to);
    if (a.arm_connect_timer_ms) {
        uv_timer_start(
            &connect_timer_,
            [](uv_timer_t* t) {
                auto& self = *static_cast<node_connection*>(t->data);
                const auto limit = std::to_string(self.config_.connect_timeout.count());
                const bool handshaking = self.fsm_.current() == connection_fsm::state::handshaking;
                std::string cause;
                if (handshaking && self.tls_ && !self.tls_->established()) {
                    cause = "TLS handshake timeout: not done within the connect timeout (" + limit +
                            " ms; a stalled server, or a plain port that does not speak TLS)";
                } else if (handshaking) {
                    cause =
                        "no answer to the handshake within the connect timeout (" + limit + " ms)";
                } else {
                    cause = "connect timeout after " + limit + " ms";
                }
                self.dispatch({connection_fsm::event::connect_timeout, cause});
            },
            *a.arm_connect_timer_ms, 0);
    }
    if (a.arm_reconnect_timer_ms) {
        uv_timer_start(
            &connect_timer_,
            [](uv_timer_t* t) {
                static_cast<node_connection*>(t->data)->dispatch(
                    {connection_fsm::event::backoff_elapsed});
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

void node_connection::resolve() {
    resolve_req_.data = this;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    const std::string port = std::to_string(address_.port);
    const int rc = uv_getaddrinfo(loop_, &resolve_req_, &node_connection::on_resolved,
                                  address_.host.c_str(), port.c_str(), &hints);
    if (rc != 0) {
        dispatch({connection_fsm::event::resolve_failed,
                  std::string{"cannot resolve '"} + address_.host + "': " + uv_strerror(rc), 0,
                  rng_.next()});
    }
}

void node_connection::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result) {
    auto& self = *static_cast<node_connection*>(req->data);
    std::string cause;
    if (status == 0 && result != nullptr) {
        self.addresses_.clear();
        for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
            if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
            sockaddr_storage a{};
            std::memcpy(&a, ai->ai_addr, ai->ai_addrlen);
            self.addresses_.push_back(a);
        }
    } else {
        cause = std::string{"cannot resolve '"} + self.address_.host + "': " + uv_strerror(status);
    }
    uv_freeaddrinfo(result);
    if (self.addresses_.empty() && cause.empty()) {
        cause = "cannot resolve '" + self.address_.host + "': no address";
    }
    if (!cause.empty()) {
        self.dispatch({connection_fsm::event::resolve_failed, cause, 0, self.rng_.next()});
    } else {
        self.dispatch({connection_fsm::event::resolved, {}, self.addresses_.size()});
    }
}

void node_connection::connect_to(std::size_t address) {
    connect_req_.data = this;
    int rc = 0;
    if (address_.is_unix()) {
        uv_pipe_init(loop_, &stream_.pipe, 0);
        stream_.pipe.data = this;
        uv_pipe_connect(&connect_req_, &stream_.pipe, address_.unix_path.c_str(),
                        &node_connection::on_connect);
    } else {
        uv_tcp_init(loop_, &stream_.tcp);
        stream_.tcp.data = this;
        uv_tcp_nodelay(&stream_.tcp, 1);
        rc = uv_tcp_connect(&connect_req_, &stream_.tcp,
                            reinterpret_cast<const sockaddr*>(&addresses_.at(address)),
                            &node_connection::on_connect);
    }
    // Queued: it is performed once the actions that asked for this connect are done.
    if (rc != 0) {
        dispatch({connection_fsm::event::connect_failed,
                  std::string{"cannot connect: "} + uv_strerror(rc), 0, rng_.next()});
    }
}

void node_connection::on_connect(uv_connect_t* req, int status) {
    auto& self = *static_cast<node_connection*>(req->data);
    if (status == UV_ECANCELED) return;  // the stream is closing: the machine knows
    if (status != 0) {
        self.dispatch({connection_fsm::event::connect_failed,
                       std::string{"cannot connect: "} + uv_strerror(status), 0, self.rng_.next()});
        return;
    }
    self.dispatch({connection_fsm::event::connect_ok});
}

void node_connection::start_handshake() {
    uv_read_start(stream(), &node_connection::on_alloc, &node_connection::on_read);
    heard_from_server_ = false;
    if (tls_context_) {
        // The ClientHello goes out now; the Redis handshake queued below waits
        // (in handshake_out_) until the TLS handshake is done: seal().
        tls_ = std::make_unique<tls_session>(*tls_context_, address_.host);
        tls_wire_.clear();
        if (!tls_->handshake()) {
            fail_transport("TLS handshake failed: " + tls_->error());
            return;
        }
    }
    // The handshake goes before everything queued while we were connecting;
    // those commands are written only once it is answered (see writable()).
    // Its requests never expire: the connect timer bounds the handshake.
    std::deque<request_fifo::request> requests;
    handshake_out_.clear();
    handshake_.begin(config_, channel_, handshake_out_, requests, this, UINT64_MAX);
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
            // the handshake (their bytes wait in out_ until it is done).
            std::deque<request_fifo::request> requests;
            for (const std::uint32_t t : s.tags) {
                requests.push_back(request_fifo::request{this, t, false, UINT64_MAX});
            }
            handshake_out_.append(s.send);
            pending_.push_front(requests);
            mark_dirty();
        }
        if (s.result == node_handshake::verdict::failed && event.status == request_status::reply) {
            dispatch({connection_fsm::event::handshake_failed, s.cause, 0, rng_.next()});
        } else if (s.result == node_handshake::verdict::done) {
            const node_handshake::restart r = handshake_.settle_identity(config_);
            if (r.restarted) counters_.restarts.fetch_add(1, std::memory_order_relaxed);
            if (r.quarantine.count() > 0) {
                quarantined_until_ = std::chrono::steady_clock::now() + r.quarantine;
            }
            if (!r.warning.empty()) warn(r.warning);
            dispatch({connection_fsm::event::handshake_ok});
        }
    } catch (...) {
        // Out of memory while reading the handshake: this connection cannot be trusted.
        dispatch({connection_fsm::event::transport_error, "out of memory in the handshake", 0,
                  rng_.next()});
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
    for (const auto& req : pending_.take_all()) {
        // Expired ones were counted as timeouts already.
        if (!req.expired && status == request_status::unreachable)
            metrics_.unreachable.fetch_add(1, std::memory_order_relaxed);
        if (!req.expired && req.sink != nullptr)
            req.sink->on_reply(req.tag, reply_event{status, nullptr, reason});
    }
    if (status == request_status::stopped) deliver_deferred();
}

}  // namespace redlock::detail
