#pragma once

#include "redlock/config.hpp"
#include "sansio/connection_fsm.hpp"
#include "sansio/node_handshake.hpp"
#include "sansio/request_fifo.hpp"
#include "transport/callback_guard.hpp"
#include "transport/close_callbacks.hpp"
#include "transport/metrics_recorder.hpp"
#include "transport/node_dialer.hpp"
#include "transport/node_trust.hpp"
#include "transport/refused_requests.hpp"
#include "transport/reply_router.hpp"
#include "transport/stream_writer.hpp"
#include "transport/tls_channel.hpp"
#include "transport/uv_handle.hpp"

#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

class write_batcher;
class random_source;
class route_ids;

/// A duration as loop milliseconds (uv_now's unit), never negative.
[[nodiscard]] inline auto loop_ms(std::chrono::milliseconds d) noexcept -> std::uint64_t {
    return d.count() > 0 ? static_cast<std::uint64_t>(d.count()) : 0;
}

/// Hands one warning line to config.logger, or to stderr without one. Loop thread.
/// The logger is a user callback like any other: one that throws is reported
/// and ignored (call_guarded), never let through, since the warning may come
/// from a libuv callback or a noexcept path, where a throw would end the host
/// process in std::terminate.
inline void log_warning(const client_config& config, const std::string& line) noexcept {
    if (config.logger) {
        call_guarded([&] { config.logger(log_level::warning, line); });
    } else {
        std::fprintf(stderr, "%s\n", line.c_str());
    }
}

/// Counters shared by a client's connections (read from any thread).
struct connection_counters {
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> timeouts{0};
    std::atomic<std::uint64_t> writes{0};  ///< write system calls (uv_try_write + uv_write)
    std::atomic<std::uint64_t> connects{0};
    std::atomic<std::size_t> connected{0};
    std::atomic<std::uint64_t> restarts{0};     ///< nodes seen coming back with a new run_id
    std::atomic<std::uint64_t> clock_steps{0};  ///< node clocks seen stepping (node_trust)
};

/// One multiplexed connection to one Redis node.
///
/// Redis answers in order, so pending requests form a FIFO. Commands queued
/// during one loop turn leave in one write. A request that misses its deadline
/// is reported as a timeout but keeps its FIFO slot, so its late reply is read
/// and discarded instead of being taken for the next request's answer. When the
/// connection drops, every pending request fails at once, and the connection
/// is re-established after a capped exponential back-off with jitter. While it
/// is down, requests fail at once (on the next loop turn) instead of waiting.
///
/// What to do is connection_fsm's (pure, exhaustively tested): the lifecycle,
/// and each request's route and deadline. This class is the libuv shell that
/// performs it, with its parts: node_dialer (resolve, connect), stream_writer
/// (the write side), reply_router (the read side), tls_channel (TLS),
/// node_handshake and request_fifo. Lock commands queued while connecting are
/// held until the node has answered its handshake, and failed unsent if it
/// never does: a hung node cannot receive a SET after the client gave up.
class node_connection : private reply_sink, private dial_listener, private write_listener {
public:
    /// `batcher` flushes what is queued once per loop turn; it outlives the connection.
    /// With `tls` (the client's, from config.tls), a TCP node whose address does
    /// not say tls=false is reached over TLS.
    node_connection(uv_loop_t* loop, write_batcher& batcher, node_address address,
                    const client_config& config, random_source& rng, connection_counters& counters,
                    std::shared_ptr<const tls_context> tls = {});
    node_connection(const node_connection&) = delete;
    auto operator=(const node_connection&) -> node_connection& = delete;
    ~node_connection();

    /// Makes this a subscriber connection: on every (re)connect it subscribes
    /// to `channel` instead of the lock handshake, and each pub/sub message that
    /// arrives goes to `on_message(payload)` (loop thread). Call before start().
    void subscribe(std::string channel, std::function<void(std::string_view)> on_message);

    /// Who must answer at the other end (node_handshake::peer): a standalone
    /// master by default. Call before start().
    void expect(node_handshake::peer p) noexcept { handshake_.expect(p); }

    /// Starts connecting (asynchronous DNS for host names).
    void start();

    /// Queues one command, already encoded (see encoded_command).
    /// `sink->on_reply(tag, ...)` runs exactly once, unless disowned. A null sink
    /// discards the outcome. Returns the request's number, for disown(), or
    /// no_request when it was not queued (its failure is delivered later).
    /// With a `watch` (a routed member's request), an outcome that is not a plain answer
    /// goes to the watcher instead, with the command kept for a resend.
    auto send(std::string_view encoded, reply_sink* sink, std::uint32_t tag) -> std::uint32_t {
        return queue(encoded, sink, tag, nullptr);
    }
    auto send(std::string_view encoded, reply_sink* sink, std::uint32_t tag,
              const request_watch& watch) -> std::uint32_t {
        return queue(encoded, sink, tag, &watch);
    }
    static constexpr std::uint32_t no_request = UINT32_MAX;
    /// Disown: `sink` gives up the reply to request `number`, read and dropped when it comes.
    /// True if that request was still waiting and still `sink`'s: `sink` then never hears
    /// of it, so an operation that has delivered its result need not stay for stragglers.
    /// Only the bits of `mask` are compared (a routed member keeps 24 of them).
    auto disown(std::uint32_t number, const reply_sink* sink,
                std::uint32_t mask = UINT32_MAX) noexcept -> bool;
    /// Encodes `argv` and queues it.
    void send(std::span<const std::string_view> argv, reply_sink* sink, std::uint32_t tag);

    /// The read path: parses `len` bytes received from the node and completes
    /// the requests they answer. Public so that fuzz targets can drive reply
    /// handling without a socket; the connection calls it for every read.
    void feed(const char* data, std::size_t len) {
        if (!replies_.feed(data, len)) fail_transport(replies_.failure());
    }

    /// Called by the write batcher: writes what was queued this turn, then
    /// delivers the failures that were deferred.
    void on_flush();

    /// Fails what is pending with `stopped`, closes every handle, then calls
    /// `done` (the object may be destroyed from then on).
    void close(std::function<void()> done);

    [[nodiscard]] auto name() const noexcept -> const std::string& { return name_; }
    /// The same, as reports carry it (shared, not copied).
    [[nodiscard]] auto report_name() const noexcept -> const node_name& { return report_name_; }
    [[nodiscard]] auto connected() const noexcept -> bool { return fsm_.ready(); }
    /// The first connection is still under way (connection_fsm::settling).
    [[nodiscard]] auto settling() const noexcept -> bool { return fsm_.settling(); }
    [[nodiscard]] auto state() const noexcept -> connection_fsm::state { return fsm_.current(); }
    [[nodiscard]] auto pending() const noexcept -> std::size_t { return pending_.size(); }
    /// The TLS session of the current stream, once its handshake is done;
    /// nothing for a plain connection, or one that is not connected.
    [[nodiscard]] auto tls() const -> std::optional<tls_info> { return tls_.negotiated(); }
    /// Subscriber role: the SUBSCRIBE of the current connection was confirmed.
    [[nodiscard]] auto subscribed() const noexcept -> bool {
        return fsm_.ready() && handshake_.subscribed();
    }
    /// The run_id the node reported at its last answered handshake (may be empty).
    [[nodiscard]] auto run_id() const noexcept -> const std::string& { return handshake_.run_id(); }
    /// `fn` runs (loop thread) each time the node has answered a handshake, so
    /// that the owner can compare identities across nodes. Call before start().
    void on_identified(std::function<void()> fn) { on_identified_ = std::move(fn); }

    /// False while the node is quarantined after a restart that may have lost
    /// acknowledged writes, or after its clock stepped: its grants must not
    /// count toward a quorum (node_trust says why).
    [[nodiscard]] auto grants_count() const noexcept -> bool {
        return std::chrono::steady_clock::now() >= trust_.quarantined_until();
    }
    [[nodiscard]] auto quarantined_until() const noexcept -> std::chrono::steady_clock::time_point {
        return trust_.quarantined_until();
    }
    [[nodiscard]] auto trust() const noexcept -> const node_trust& { return trust_; }
    /// Sends TIME now (a renewal does, ahead of its extend on this connection, so
    /// that a step is judged before the extend's answer is read). Nothing when
    /// the connection is not ready: the next handshake reads the clock anyway.
    void probe_clock() {
        if (fsm_.ready())
            send("*1\r\n$4\r\nTIME\r\n", &trust_,
                 trust_.probe_sent(std::chrono::steady_clock::now()));
    }
    /// A routed member's small number for this connection (see route_ids); the owner
    /// forgets it when the connection goes.
    void set_route(route_ids* owner, std::uint8_t id) noexcept {
        route_owner_ = owner;
        route_id_ = id;
    }
    [[nodiscard]] auto route_id() const noexcept -> std::uint8_t { return route_id_; }
    /// This node's counters for client::metrics(); read from any thread.
    [[nodiscard]] auto metrics() const noexcept -> const node_counters& { return metrics_; }

private:
    using stream_handle = uv_handle<stream_storage, node_connection>;
    using timer_handle = uv_handle<uv_timer_t, node_connection>;

    /// Feeds one event to the state machine and performs what it says. Events
    /// raised while actions are being performed (a sink that closes the
    /// connection from a failure callback) are queued and run next, so one set
    /// of actions is always performed whole before the next.
    void dispatch(connection_fsm::input in);
    /// Returns true when the connection told its owner it closed (it may be gone).
    auto perform(connection_fsm::actions& a) -> bool;
    void connect_to(std::size_t address);
    void start_handshake();
    void fail_requests(request_status status, std::string_view cause);
    /// Both send()s: `watch` null for a plain request.
    auto queue(std::string_view encoded, reply_sink* sink, std::uint32_t tag,
               const request_watch* watch) -> std::uint32_t;
    void fail_transport(std::string cause);
    /// TLS: ciphertext read from the node, decrypted and fed to feed().
    void feed_tls(const char* data, std::size_t len);

    void on_reply(std::uint32_t tag, const reply_event& event) noexcept override;
    void on_dialed(connection_fsm::input in) override;
    void on_written(int status) override;
    /// Counts this connection in (or out of) the connected nodes, once.
    void count_connected(bool connected) noexcept;

    void mark_dirty();
    void flush();
    /// Out of line: flush() stays small enough to inline into on_flush().
    void write_failed();
    void start_deadline_timer(std::uint64_t deadline, std::uint64_t now);
    void on_deadline();
    void on_connect_timeout();
    void warn(std::string_view message);
    [[nodiscard]] auto stream() noexcept -> uv_stream_t* {
        return reinterpret_cast<uv_stream_t*>(stream_.get());
    }

    static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
    static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);

    uv_loop_t* loop_;
    write_batcher& batcher_;
    node_address address_;
    std::string name_;
    node_name report_name_;
    const client_config& config_;
    random_source& rng_;
    connection_counters& counters_;
    node_dialer dialer_;

    connection_fsm fsm_;
    std::deque<connection_fsm::input> events_;  // raised while performing
    bool dispatching_ = false;
    std::string last_error_;

    stream_handle stream_{*this};
    timer_handle connect_timer_{*this};  // connect + handshake timeout, then reconnect back-off
    timer_handle deadline_timer_{*this};
    int timers_open_ = 2;
    bool counted_connected_ = false;  // in counters_.connected: the handshake was answered
    bool dirty_ = false;
    close_callbacks on_closed_;
    std::function<void()> on_identified_;

    node_handshake handshake_;
    // TLS: a new session per connection, made when TCP is up; the Redis
    // handshake waits in the writer until the TLS one is done.
    std::shared_ptr<const tls_context> tls_context_;  // null: plain TCP
    tls_channel tls_;
    node_counters metrics_;
    node_trust trust_{config_, name_, counters_, metrics_};
    std::chrono::steady_clock::time_point handshake_sent_{};  // the TIME in it went no earlier

    request_fifo pending_;
    reply_router replies_{pending_, metrics_};
    stream_writer writer_{*this, tls_, counters_.writes};
    refused_requests refused_;
    // hiredis's reader copies what is read, and its buffer grows to the largest read.
    char read_buf_[4 * 1024];
    route_ids* route_owner_ = nullptr;
    std::uint8_t route_id_ = UINT8_MAX;
    // Whether this connection has read a byte yet: a plain connection closed
    // before any answer is most likely a TLS port (its error says so).
    bool heard_from_server_ = false;
};

}  // namespace redlock::detail
