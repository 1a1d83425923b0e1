#pragma once

#include "transport/close_callbacks.hpp"
#include "sansio/connection_fsm.hpp"
#include "transport/metrics_recorder.hpp"
#include "sansio/node_handshake.hpp"
#include "transport/reply_reader.hpp"
#include "sansio/request_fifo.hpp"
#include "transport/tls_session.hpp"
#include "redlock/config.hpp"

#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

class flush_hooks;
class random_source;

/// A duration as loop milliseconds (uv_now's unit), never negative.
[[nodiscard]] inline auto loop_ms(std::chrono::milliseconds d) noexcept -> std::uint64_t {
    return d.count() > 0 ? static_cast<std::uint64_t>(d.count()) : 0;
}
[[nodiscard]] inline auto as_uv_handle(void* h) noexcept -> uv_handle_t* {
    return static_cast<uv_handle_t*>(h);
}

/// Hands one warning line to config.logger, or to stderr without one. Loop thread.
inline void log_warning(const client_config& config, const std::string& line) {
    if (config.logger) {
        config.logger(log_level::warning, line);
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
    std::atomic<std::uint64_t> restarts{0};  ///< nodes seen coming back with a new run_id
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
/// Its lifecycle is connection_fsm (pure, exhaustively tested); the handshake
/// is node_handshake and the FIFO request_fifo. This class is the libuv shell
/// that performs what they decide. Lock commands queued while connecting are
/// held until the node has answered its handshake, and failed unsent if it
/// never does: a hung node cannot receive a SET after the client gave up.
class node_connection : private reply_sink {
public:
    /// `hooks` flushes what is queued once per loop turn; it outlives the connection.
    /// With `tls` (the client's, from config.tls), a TCP node whose address does
    /// not say tls=false is reached over TLS.
    node_connection(uv_loop_t* loop, flush_hooks& hooks, node_address address,
                    const client_config& config, random_source& rng, connection_counters& counters,
                    std::shared_ptr<const tls_context> tls = {});

    /// Makes this a subscriber connection: on every (re)connect it subscribes
    /// to `channel` instead of the lock handshake, and each pub/sub message that
    /// arrives goes to `on_message(payload)` (loop thread). Call before start().
    void subscribe(std::string channel, std::function<void(std::string_view)> on_message);
    node_connection(const node_connection&) = delete;
    auto operator=(const node_connection&) -> node_connection& = delete;
    ~node_connection();

    /// Starts connecting (asynchronous DNS for host names).
    void start();

    /// Queues one command, already encoded (see encoded_command).
    /// `sink->on_reply(tag, ...)` runs exactly once, unless disowned. A null sink
    /// discards the outcome. Returns the request's number, for disown(), or
    /// no_request when it was not queued (its failure is delivered later).
    auto send(std::string_view encoded, reply_sink* sink, std::uint32_t tag) -> std::uint32_t;
    static constexpr std::uint32_t no_request = UINT32_MAX;
    /// `sink` no longer wants the reply to request `number`: if that request is
    /// still waiting for its reply and still `sink`'s, its reply will be read
    /// and discarded, and `sink` never hears of it (true). An operation that
    /// has delivered its result need not stay alive for stragglers.
    auto disown(std::uint32_t number, const reply_sink* sink) noexcept -> bool;
    /// Encodes `argv` and queues it.
    void send(std::span<const std::string_view> argv, reply_sink* sink, std::uint32_t tag);

    /// The read path: parses `len` bytes received from the node and completes
    /// the requests they answer. Public so that fuzz targets can drive reply
    /// handling without a socket; the connection calls it for every read.
    void feed(const char* data, std::size_t len);

    /// Called by the flush hooks: writes what was queued this turn, then
    /// delivers the failures that were deferred.
    void on_flush();

    /// Fails what is pending with `stopped`, closes every handle, then calls
    /// `done` (the object may be destroyed from then on).
    void close(std::function<void()> done);

    [[nodiscard]] auto name() const noexcept -> const std::string& { return name_; }
    [[nodiscard]] auto connected() const noexcept -> bool { return fsm_.ready(); }
    [[nodiscard]] auto state() const noexcept -> connection_fsm::state { return fsm_.current(); }
    [[nodiscard]] auto pending() const noexcept -> std::size_t { return pending_.size(); }
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
    /// acknowledged writes: its grants must not count toward a quorum.
    [[nodiscard]] auto grants_count() const noexcept -> bool {
        return std::chrono::steady_clock::now() >= quarantined_until_;
    }
    [[nodiscard]] auto quarantined_until() const noexcept -> std::chrono::steady_clock::time_point {
        return quarantined_until_;
    }
    /// This node's counters for client::metrics(); read from any thread.
    [[nodiscard]] auto metrics() const noexcept -> const node_counters& { return metrics_; }

private:
    /// Feeds one event to the state machine and performs what it says. Events
    /// raised while actions are being performed (a sink that closes the
    /// connection from a failure callback) are queued and run next, so one set
    /// of actions is always performed whole before the next.
    void dispatch(connection_fsm::input in);
    /// Returns true when the connection told its owner it closed (it may be gone).
    auto perform(connection_fsm::actions& a) -> bool;
    void connect_to(std::size_t address);
    void resolve();
    void start_handshake();
    void fail_requests(request_status status, std::string_view cause);
    void fail_transport(std::string cause);
    /// TLS: ciphertext read from the node, decrypted and fed to feed().
    void feed_tls(const char* data, std::size_t len);
    /// TLS: encrypts what writable() holds (once the TLS handshake is done) and
    /// moves the session's ciphertext to tls_wire_. False after a TLS error,
    /// reported to the state machine when `report` (not from inside send()).
    auto seal(bool report) -> bool;

    void on_reply(std::uint32_t tag, const reply_event& event) noexcept override;
    /// Counts this connection in (or out of) the connected nodes, once.
    void count_connected(bool connected) noexcept;

    void mark_dirty();
    void flush();
    void write_eagerly();
    void deliver_deferred();
    void arm_deadline(std::uint64_t deadline);
    void on_deadline();
    void warn(std::string_view message);
    [[nodiscard]] auto stream() noexcept -> uv_stream_t*;

    /// The bytes the next write may take: the handshake until it is answered,
    /// then the commands queued meanwhile and after.
    [[nodiscard]] auto writable() noexcept -> std::string&;

    static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
    static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
    static void on_write(uv_write_t* req, int status);
    static void on_connect(uv_connect_t* req, int status);
    static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result);

    struct deferred_failure {
        reply_sink* sink;
        std::uint32_t tag;
        request_status status;
    };

    uv_loop_t* loop_;
    flush_hooks& hooks_;
    node_address address_;
    std::string name_;
    const client_config& config_;
    random_source& rng_;
    connection_counters& counters_;

    connection_fsm fsm_;
    std::deque<connection_fsm::input> events_;  // raised while performing
    bool dispatching_ = false;
    std::string last_error_;
    std::uint64_t epoch_ = 0;  // bumped whenever pending requests fail: loops over them stop
    std::vector<sockaddr_storage> addresses_;  // resolved (or the numeric one)

    union {
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } stream_{};
    uv_connect_t connect_req_{};
    uv_getaddrinfo_t resolve_req_{};
    uv_write_t write_req_{};
    bool writing_ = false;
    bool eager_blocked_ = false;      // an eager write this turn found the kernel full
    bool counted_connected_ = false;  // in counters_.connected: the handshake was answered
    uv_timer_t connect_timer_{};      // connect + handshake timeout, then reconnect back-off
    uv_timer_t deadline_timer_{};
    int timers_open_ = 2;
    std::uint64_t deadline_armed_ = 0;
    bool dirty_ = false;
    close_callbacks on_closed_;

    // Subscriber role (see subscribe()).
    std::string channel_;
    std::function<void(std::string_view)> on_message_;
    std::function<void()> on_identified_;

    node_handshake handshake_;
    // TLS (tls_session.hpp): a new session per connection, made when TCP is up;
    // its Redis handshake waits in handshake_out_ until the TLS one is done.
    std::shared_ptr<const tls_context> tls_context_;  // null: plain TCP
    std::unique_ptr<tls_session> tls_;
    std::string tls_wire_;   // ciphertext not yet handed to the kernel
    std::string tls_plain_;  // decrypted bytes of the current read
    std::chrono::steady_clock::time_point quarantined_until_{};
    node_counters metrics_;

    reply_reader reader_;
    request_fifo pending_;
    std::deque<deferred_failure> deferred_;
    // Commands queued in one loop turn leave together, in one write per this
    // many bytes: at 8 KiB a write still carries 50 to 100 lock commands, and
    // the bytes waiting here stay small with a thousand locks in flight
    // (32 KiB cost about 150 bytes per lock in flight; docs/benchmarks.md).
    static constexpr std::size_t eager_write_bytes = 8 * 1024;
    std::string handshake_out_;  // the handshake, written before anything else
    std::string out_;            // encoded commands not yet handed to the kernel
    std::string writing_buf_;    // bytes of the uv_write in flight
    // hiredis's reader copies what is read, and its buffer grows to the largest read.
    char read_buf_[4 * 1024];
    // Whether this connection has read a byte yet: a plain connection closed
    // before any answer is most likely a TLS port (its error says so).
    bool heard_from_server_ = false;
};

}  // namespace redlock::detail
