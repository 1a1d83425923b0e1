#pragma once

#include "detail/reply_reader.hpp"
#include "redlock/config.hpp"

#include <hiredis/hiredis.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

class flush_hooks;
class random_source;

/// How a request ended.
enum class request_status : std::uint8_t {
    reply,        ///< the node answered (possibly with a Redis error reply)
    timeout,      ///< no answer within the request's deadline (its slot stays, see below)
    unreachable,  ///< not connected, or the connection dropped before the answer
    stopped,      ///< the client is shutting down
};

struct reply_event {
    request_status status;
    const redisReply* reply;  ///< non-null iff status == reply; valid only during the call
    std::string_view cause;   ///< transport cause when status != reply
};

/// Receives the outcome of requests. on_reply runs exactly once per request,
/// on the loop thread, never inside node_connection::send.
class reply_sink {
public:
    virtual void on_reply(std::uint32_t tag, const reply_event& event) noexcept = 0;

protected:
    reply_sink() = default;
    reply_sink(const reply_sink&) = default;
    auto operator=(const reply_sink&) -> reply_sink& = default;
    virtual ~reply_sink() = default;
};

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
class node_connection : private reply_sink {
public:
    /// `hooks` flushes what is queued once per loop turn; it outlives the connection.
    node_connection(uv_loop_t* loop, flush_hooks& hooks, node_address address,
                    const client_config& config, random_source& rng, connection_counters& counters);

    /// Makes this a subscriber connection: on every (re)connect it subscribes
    /// to `channel` instead of loading scripts, and each pub/sub message that
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
    [[nodiscard]] auto connected() const noexcept -> bool { return state_ == state::ready; }
    [[nodiscard]] auto pending() const noexcept -> std::size_t { return pending_.size(); }
    /// Subscriber role: the SUBSCRIBE of the current connection was confirmed.
    [[nodiscard]] auto subscribed() const noexcept -> bool { return subscribed_; }

    /// False while the node is quarantined after a restart that may have lost
    /// acknowledged writes: its grants must not count toward a quorum.
    [[nodiscard]] auto grants_count() const noexcept -> bool {
        return std::chrono::steady_clock::now() >= quarantined_until_;
    }
    [[nodiscard]] auto quarantined_until() const noexcept -> std::chrono::steady_clock::time_point {
        return quarantined_until_;
    }

private:
    enum class state { idle, resolving, connecting, ready, backoff, stopping, stopped };

    struct request {
        reply_sink* sink;
        std::uint32_t tag;
        bool expired;
        std::uint64_t deadline;  // uv_now() milliseconds
    };
    struct deferred_failure {
        reply_sink* sink;
        std::uint32_t tag;
        request_status status;
    };

    void on_reply(std::uint32_t tag, const reply_event& event) noexcept override;
    /// Counts this connection in (or out of) the connected nodes, once.
    void count_connected(bool connected) noexcept;
    /// Queues the handshake's `commands` and `requests` before everything else.
    void queue_first(std::string_view commands, const std::deque<request>& requests,
                     std::uint64_t deadline);
    void on_identity(std::uint32_t tag, const reply_event& event);

    void begin_connect();
    void connect_to(const sockaddr* address);
    void on_connected();
    void disconnect(std::string cause);
    void schedule_reconnect();
    void on_stream_closed();

    void mark_dirty();
    void flush();
    void write_eagerly();
    void deliver_deferred();
    void arm_deadline(std::uint64_t deadline);
    void on_deadline();
    void fail_pending(request_status status, std::string_view cause);
    void maybe_closed();
    void warn(std::string_view message);
    [[nodiscard]] auto stream() noexcept -> uv_stream_t*;

    static void on_alloc(uv_handle_t* handle, std::size_t suggested, uv_buf_t* buf);
    static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
    static void on_write(uv_write_t* req, int status);
    static void on_connect(uv_connect_t* req, int status);
    static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result);

    uv_loop_t* loop_;
    flush_hooks& hooks_;
    node_address address_;
    std::string name_;
    const client_config& config_;
    random_source& rng_;
    connection_counters& counters_;

    state state_ = state::idle;
    std::string last_error_;
    unsigned failures_ = 0;    // consecutive failed connects, for back-off
    std::uint64_t epoch_ = 0;  // bumped on every disconnect: stale callbacks check it

    union {
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } stream_{};
    bool stream_open_ = false;
    uv_connect_t connect_req_{};
    uv_getaddrinfo_t resolve_req_{};
    bool resolving_ = false;
    uv_write_t write_req_{};
    bool writing_ = false;
    bool eager_blocked_ = false;
    bool counted_connected_ = false;  // in counters_.connected: the handshake was answered  // an
                                      // eager write this turn found the kernel full
    uv_timer_t connect_timer_{};      // connect timeout, then reconnect back-off
    uv_timer_t deadline_timer_{};
    std::uint64_t deadline_armed_ = 0;
    bool dirty_ = false;
    int open_handles_ = 0;
    std::function<void()> on_closed_;

    // Subscriber role (see subscribe()).
    std::string channel_;
    bool subscribed_ = false;
    std::function<void(std::string_view)> on_message_;

    // What the node said about itself at the last handshake (restart safety).
    std::string run_id_;
    std::string new_run_id_;
    bool aof_ = false;
    std::string appendfsync_;
    int identity_replies_ = 0;
    bool identity_warned_ = false;
    std::chrono::steady_clock::time_point quarantined_until_{};

    reply_reader reader_;
    std::deque<request> pending_;
    // The number of pending_.front(): request numbers count up as requests are
    // queued, so a number finds its request in constant time (wrapping is
    // harmless: a number is only looked up while its request is queued).
    std::uint32_t front_number_ = 0;
    std::deque<deferred_failure> deferred_;
    // Commands queued in one loop turn leave together, in one write per this
    // many bytes: at 8 KiB a write still carries 50 to 100 lock commands, and
    // the bytes waiting here stay small with a thousand locks in flight
    // (32 KiB cost about 150 bytes per lock in flight; docs/benchmarks.md).
    static constexpr std::size_t eager_write_bytes = 8 * 1024;
    std::string out_;          // encoded commands not yet handed to the kernel
    std::string writing_buf_;  // bytes of the uv_write in flight
    // hiredis's reader copies what is read, and its buffer grows to the largest read.
    char read_buf_[4 * 1024];
};

}  // namespace redlock::detail
