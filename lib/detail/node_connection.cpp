#include "detail/node_connection.hpp"

#include "detail/command.hpp"
#include "detail/flush_hooks.hpp"
#include "detail/random.hpp"
#include "detail/scripts.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

namespace redlock::detail {
namespace {

constexpr std::uint32_t auth_tag = 1;
constexpr std::uint32_t script_load_tag = 2;
constexpr std::uint32_t info_server_tag = 3;
constexpr std::uint32_t info_persistence_tag = 4;
constexpr std::uint32_t config_fsync_tag = 5;
constexpr std::uint32_t subscribe_tag = 6;

/// A pub/sub push: ["message", channel, payload].
auto pushed_message(const redisReply* r) -> const redisReply* {
    if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 3) return nullptr;
    const redisReply* kind = r->element[0];
    if (kind == nullptr || reply_text(kind) != "message") return nullptr;
    return r->element[2];
}

/// `field:value` from the text of an INFO reply.
auto info_field(std::string_view text, std::string_view field) -> std::string_view {
    while (!text.empty()) {
        const auto eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.size() > field.size() && line.starts_with(field) && line[field.size()] == ':') {
            return line.substr(field.size() + 1);
        }
        if (eol == std::string_view::npos) break;
        text.remove_prefix(eol + 1);
    }
    return {};
}

auto as_handle(void* h) noexcept -> uv_handle_t* {
    return static_cast<uv_handle_t*>(h);
}

auto ms(std::chrono::milliseconds d) noexcept -> std::uint64_t {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(d.count(), 0));
}

}  // namespace

node_connection::node_connection(uv_loop_t* loop, flush_hooks& hooks, node_address address,
                                 const client_config& config, random_source& rng,
                                 connection_counters& counters)
    : loop_{loop},
      hooks_{hooks},
      address_{std::move(address)},
      name_{address_.to_string()},
      config_{config},
      rng_{rng},
      counters_{counters} {
    uv_timer_init(loop_, &connect_timer_);
    uv_timer_init(loop_, &deadline_timer_);
    connect_timer_.data = this;
    deadline_timer_.data = this;
    open_handles_ = 2;
}

node_connection::~node_connection() {
    hooks_.forget(*this);
}

auto node_connection::stream() noexcept -> uv_stream_t* {
    return reinterpret_cast<uv_stream_t*>(&stream_);
}

void node_connection::warn(std::string_view message) {
    std::string line = "redlock: node " + name_ + ": " + std::string{message};
    if (config_.logger) {
        config_.logger(log_level::warning, line);
    } else {
        std::fprintf(stderr, "%s\n", line.c_str());
    }
}

// ---- connecting ---------------------------------------------------------------------------

void node_connection::start() {
    if (state_ == state::idle) begin_connect();
}

void node_connection::begin_connect() {
    state_ = state::connecting;
    uv_timer_start(
        &connect_timer_,
        [](uv_timer_t* t) {
            auto& self = *static_cast<node_connection*>(t->data);
            self.disconnect("connect timeout after " +
                            std::to_string(self.config_.connect_timeout.count()) + " ms");
        },
        ms(config_.connect_timeout), 0);

    if (address_.is_unix()) {
        uv_pipe_init(loop_, &stream_.pipe, 0);
        stream_.pipe.data = this;
        stream_open_ = true;
        connect_req_.data = this;
        uv_pipe_connect(&connect_req_, &stream_.pipe, address_.unix_path.c_str(),
                        &node_connection::on_connect);
        return;
    }
    // Numeric addresses need no resolver round trip.
    sockaddr_storage numeric{};
    if (uv_ip4_addr(address_.host.c_str(), address_.port,
                    reinterpret_cast<sockaddr_in*>(&numeric)) == 0 ||
        uv_ip6_addr(address_.host.c_str(), address_.port,
                    reinterpret_cast<sockaddr_in6*>(&numeric)) == 0) {
        connect_to(reinterpret_cast<const sockaddr*>(&numeric));
        return;
    }
    state_ = state::resolving;
    resolving_ = true;
    resolve_req_.data = this;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    const std::string port = std::to_string(address_.port);
    const int rc = uv_getaddrinfo(loop_, &resolve_req_, &node_connection::on_resolved,
                                  address_.host.c_str(), port.c_str(), &hints);
    if (rc != 0) {
        resolving_ = false;
        disconnect(std::string{"cannot resolve: "} + uv_strerror(rc));
    }
}

void node_connection::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result) {
    auto& self = *static_cast<node_connection*>(req->data);
    self.resolving_ = false;
    if (self.state_ != state::resolving) {  // timed out or stopping meanwhile
        uv_freeaddrinfo(result);
        self.maybe_closed();
        return;
    }
    if (status != 0 || result == nullptr) {
        uv_freeaddrinfo(result);
        self.disconnect(std::string{"cannot resolve '"} + self.address_.host +
                        "': " + uv_strerror(status));
        return;
    }
    self.state_ = state::connecting;
    self.connect_to(result->ai_addr);
    uv_freeaddrinfo(result);
}

void node_connection::connect_to(const sockaddr* address) {
    uv_tcp_init(loop_, &stream_.tcp);
    stream_.tcp.data = this;
    stream_open_ = true;
    uv_tcp_nodelay(&stream_.tcp, 1);
    connect_req_.data = this;
    const int rc =
        uv_tcp_connect(&connect_req_, &stream_.tcp, address, &node_connection::on_connect);
    if (rc != 0) disconnect(std::string{"cannot connect: "} + uv_strerror(rc));
}

void node_connection::on_connect(uv_connect_t* req, int status) {
    auto& self = *static_cast<node_connection*>(req->data);
    if (status == UV_ECANCELED || self.state_ != state::connecting) return;
    if (status != 0) {
        self.disconnect(std::string{"cannot connect: "} + uv_strerror(status));
        return;
    }
    self.on_connected();
}

void node_connection::on_connected() {
    uv_timer_stop(&connect_timer_);
    state_ = state::ready;
    // failures_ is reset, and the node counted as connected, only once it has
    // answered the handshake: a peer that accepts and closes at once must still
    // meet a growing back-off, and one that accepts and never answers (hung,
    // SIGSTOPped) is not a connected node.
    if (!last_error_.empty()) {
        warn("connected again");
        last_error_.clear();
    }
    uv_read_start(stream(), &node_connection::on_alloc, &node_connection::on_read);

    // The handshake goes before everything queued while we were connecting:
    // AUTH, then SCRIPT LOAD of every script. Loading on each connect means a
    // restarted node has our scripts before any EVALSHA reaches it, including
    // a release whose request timed out and whose NOSCRIPT we would not see.
    std::string handshake;
    std::deque<request> handshake_requests;
    const std::uint64_t deadline = uv_now(loop_) + ms(config_.connect_timeout);
    if (!config_.password.empty()) {
        if (config_.username.empty()) {
            append_command(handshake, {"AUTH", config_.password.reveal()});
        } else {
            append_command(handshake, {"AUTH", config_.username, config_.password.reveal()});
        }
        handshake_requests.push_back(request{this, auth_tag, false, deadline});
    }
    if (!channel_.empty()) {
        // A subscriber needs nothing else: its SUBSCRIBE is answered in order,
        // and every message after it is pushed.
        append_command(handshake, {"SUBSCRIBE", channel_});
        handshake_requests.push_back(request{this, subscribe_tag, false, deadline});
        queue_first(handshake, handshake_requests, deadline);
        return;
    }
    for (const script* s : all_scripts()) {
        append_command(handshake, {"SCRIPT", "LOAD", s->source});
        handshake_requests.push_back(request{this, script_load_tag, false, deadline});
    }
    // Who the node is and whether it persists every write, answered before any
    // reply to a queued command: a restart is known before a grant is counted.
    identity_replies_ = 0;
    new_run_id_.clear();
    aof_ = false;
    appendfsync_.clear();
    append_command(handshake, {"INFO", "server"});
    handshake_requests.push_back(request{this, info_server_tag, false, deadline});
    append_command(handshake, {"INFO", "persistence"});
    handshake_requests.push_back(request{this, info_persistence_tag, false, deadline});
    append_command(handshake, {"CONFIG", "GET", "appendfsync"});
    handshake_requests.push_back(request{this, config_fsync_tag, false, deadline});
    queue_first(handshake, handshake_requests, deadline);
}

void node_connection::queue_first(std::string_view commands, const std::deque<request>& requests,
                                  std::uint64_t deadline) {
    out_.insert(0, commands);
    pending_.insert(pending_.begin(), requests.begin(), requests.end());
    front_number_ -= static_cast<std::uint32_t>(requests.size());  // the others keep their numbers
    arm_deadline(deadline);
    mark_dirty();
}

void node_connection::subscribe(std::string channel,
                                std::function<void(std::string_view)> on_message) {
    channel_ = std::move(channel);
    on_message_ = std::move(on_message);
}

void node_connection::on_reply(std::uint32_t tag, const reply_event& event) noexcept {
    if (tag == subscribe_tag) {
        subscribed_ = event.status == request_status::reply && !is_error(event.reply);
        if (subscribed_) {
            failures_ = 0;  // a subscriber's handshake is its SUBSCRIBE
            count_connected(true);
        }
        if (event.status == request_status::reply && is_error(event.reply)) {
            warn("SUBSCRIBE failed: " + describe_reply(event.reply) +
                 "; waiters fall back to their TTL-based wake-up");
        }
        return;
    }
    if (tag == info_server_tag || tag == info_persistence_tag || tag == config_fsync_tag) {
        try {
            on_identity(tag, event);
        } catch (...) {
            // Out of memory while parsing: treat the node as not persisting.
        }
        return;
    }
    if (tag == script_load_tag) {
        // A node still loading its data cannot serve locks yet: come back later.
        if (event.status == request_status::reply && is_loading(event.reply)) {
            disconnect("still loading its data set");
            return;
        }
        // Not fatal: EVALSHA falls back to EVAL. But a node that cannot run
        // scripts cannot release locks, and the operator should hear of it.
        if (event.status == request_status::reply && is_error(event.reply)) {
            warn("SCRIPT LOAD failed: " + describe_reply(event.reply));
        }
        return;
    }
    if (tag != auth_tag) return;
    if (event.status == request_status::reply && !is_error(event.reply)) return;
    if (event.status == request_status::reply) {
        // Never echo the password; the server's error text does not contain it.
        disconnect("AUTH failed: " + describe_reply(event.reply));
    } else if (event.status == request_status::timeout) {
        disconnect("AUTH timed out");
    }
}

void node_connection::on_identity(std::uint32_t tag, const reply_event& event) {
    if (event.status == request_status::timeout) {
        // Restart safety hinges on knowing who the node is: no guessing.
        disconnect("no answer to the handshake within the connect timeout");
        return;
    }
    if (event.status != request_status::reply) return;  // dropped or stopping: nothing to learn
    if (is_loading(event.reply)) {
        disconnect("still loading its data set");
        return;
    }
    if (tag == info_server_tag && is_error(event.reply)) {
        if (!identity_warned_) {
            identity_warned_ = true;
            warn("cannot read its run_id (" + describe_reply(event.reply) +
                 "): a restart of this node cannot be detected");
        }
    }
    if (event.status == request_status::reply) {
        const redisReply* r = event.reply;
        if (tag == info_server_tag) {
            new_run_id_ = std::string{info_field(reply_text(r), "run_id")};
        } else if (tag == info_persistence_tag) {
            aof_ = info_field(reply_text(r), "aof_enabled") == "1";
        } else if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
            appendfsync_ = std::string{reply_text(r->element[1])};
        }
        // CONFIG may be disabled or renamed: then persistence is unknown, and
        // unknown is treated as "may lose writes".
    }
    if (++identity_replies_ < 3) return;
    failures_ = 0;  // the node answered the whole handshake: it is really up
    count_connected(true);
    if (new_run_id_.empty()) return;
    const bool restarted = !run_id_.empty() && new_run_id_ != run_id_;
    run_id_ = new_run_id_;
    if (!restarted) return;
    counters_.restarts.fetch_add(1, std::memory_order_relaxed);
    const bool persists = aof_ && appendfsync_ == "always";
    const auto quarantine = config_.restart_quarantine.value_or(config_.lock.ttl);
    if (persists || quarantine <= std::chrono::milliseconds{0}) {
        warn("restarted (new run_id); it persists every write, so its grants count at once");
        return;
    }
    quarantined_until_ = std::chrono::steady_clock::now() + quarantine;
    warn(
        "restarted (new run_id) without persisting every write (appendonly yes + appendfsync "
        "always): its grants are not counted for " +
        std::to_string(quarantine.count()) + " ms, the delayed-restart rule");
}

void node_connection::count_connected(bool connected) noexcept {
    if (connected == counted_connected_) return;
    counted_connected_ = connected;
    if (connected) {
        counters_.connects.fetch_add(1, std::memory_order_relaxed);
        counters_.connected.fetch_add(1, std::memory_order_relaxed);
    } else {
        counters_.connected.fetch_sub(1, std::memory_order_relaxed);
    }
}

void node_connection::disconnect(std::string cause) {
    if (state_ == state::stopping || state_ == state::stopped || state_ == state::backoff) return;
    const bool was_ready = state_ == state::ready;
    subscribed_ = false;
    count_connected(false);
    if (last_error_.empty() || was_ready) warn("unreachable: " + cause);
    last_error_ = cause;
    ++epoch_;
    ++failures_;
    state_ = state::backoff;
    uv_timer_stop(&connect_timer_);
    if (resolving_) uv_cancel(reinterpret_cast<uv_req_t*>(&resolve_req_));

    out_.clear();
    reader_.reset();
    fail_pending(request_status::unreachable, last_error_);

    if (stream_open_) {
        uv_close(as_handle(stream()), [](uv_handle_t* h) {
            static_cast<node_connection*>(h->data)->on_stream_closed();
        });
    } else {
        schedule_reconnect();
    }
}

void node_connection::on_stream_closed() {
    stream_open_ = false;
    writing_ = false;
    writing_buf_.clear();
    if (state_ == state::stopping) {
        maybe_closed();
        return;
    }
    schedule_reconnect();
}

void node_connection::schedule_reconnect() {
    if (state_ != state::backoff) return;
    const unsigned shift = std::min(failures_ > 0 ? failures_ - 1 : 0U, 16U);
    const std::chrono::milliseconds base = std::min<std::chrono::milliseconds>(
        config_.reconnect.min_delay * (std::int64_t{1} << shift), config_.reconnect.max_delay);
    // Half fixed, half random: clients that lost a node together do not come back in lockstep.
    const auto delay = base / 2 + rng_.jitter(base / 2);
    uv_timer_start(
        &connect_timer_,
        [](uv_timer_t* t) {
            auto& self = *static_cast<node_connection*>(t->data);
            if (self.state_ == state::backoff) self.begin_connect();
        },
        ms(delay), 0);
}

// ---- requests -----------------------------------------------------------------------------

void node_connection::send(std::span<const std::string_view> argv, reply_sink* sink,
                           std::uint32_t tag) {
    send(encoded_command{argv}.bytes(), sink, tag);
}

auto node_connection::send(std::string_view encoded, reply_sink* sink, std::uint32_t tag)
    -> std::uint32_t {
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    switch (state_) {
        case state::ready:
        case state::connecting:
        case state::resolving:
        case state::idle: {
            if (state_ == state::ready && !writing_ && !eager_blocked_ && !out_.empty() &&
                out_.size() + encoded.size() > eager_write_bytes) {
                // A burst is handed to the kernel as it grows, so the bytes waiting
                // here stay within one write's worth however many locks are in flight.
                write_eagerly();
            }
            if (out_.size() + encoded.size() > out_.capacity() &&
                out_.capacity() < eager_write_bytes) {
                out_.reserve(eager_write_bytes);  // not doubled past it on the way up
            }
            out_.append(encoded);
            // Queued while connecting, a request also waits for the connection
            // (and its handshake): a fresh client's first attempt is not lost to
            // the connect time. A node that refuses fails at once regardless.
            const std::uint64_t setup = state_ == state::ready ? 0 : ms(config_.connect_timeout);
            const std::uint64_t deadline = uv_now(loop_) + setup + ms(config_.request_timeout);
            const auto number = front_number_ + static_cast<std::uint32_t>(pending_.size());
            pending_.push_back(request{sink, tag, false, deadline});
            arm_deadline(deadline);
            if (state_ == state::ready) mark_dirty();
            return number;
        }
        case state::backoff:
            deferred_.push_back(deferred_failure{sink, tag, request_status::unreachable});
            break;
        case state::stopping:
        case state::stopped:
            deferred_.push_back(deferred_failure{sink, tag, request_status::stopped});
            break;
    }
    mark_dirty();  // failures are delivered on the next hook, never inside send()
    return no_request;
}

auto node_connection::disown(std::uint32_t number, const reply_sink* sink) noexcept -> bool {
    if (number == no_request || sink == nullptr) return false;
    const std::uint32_t index = number - front_number_;
    if (index >= pending_.size()) return false;
    request& req = pending_[index];
    if (req.sink != sink || req.expired) return false;
    req.sink = nullptr;
    return true;
}

void node_connection::mark_dirty() {
    if (dirty_ || state_ == state::stopped) return;
    dirty_ = true;
    hooks_.request(*this);  // everything queued this turn leaves in one write
}

void node_connection::on_flush() {
    dirty_ = false;
    eager_blocked_ = false;
    flush();
    deliver_deferred();
}

void node_connection::deliver_deferred() {
    // A sink may queue more failures while we deliver: take a batch at a time.
    while (!deferred_.empty()) {
        std::deque<deferred_failure> batch;
        batch.swap(deferred_);
        for (const auto& f : batch) {
            if (f.sink == nullptr) continue;
            const std::string_view cause = f.status == request_status::stopped
                                               ? "client stopped"
                                               : std::string_view{last_error_};
            f.sink->on_reply(f.tag, reply_event{f.status, nullptr, cause});
        }
    }
}

void node_connection::write_eagerly() {
    uv_buf_t buf = uv_buf_init(out_.data(), static_cast<unsigned>(out_.size()));
    counters_.writes.fetch_add(1, std::memory_order_relaxed);
    const int written = uv_try_write(stream(), &buf, 1);
    // An error is left for the hook's flush to meet again: a disconnect here
    // would fail requests inside send(). A kernel that took less than all has
    // no room: no more tries this turn (the flush hands the rest to libuv).
    if (written > 0) out_.erase(0, static_cast<std::size_t>(written));
    if (written < static_cast<int>(buf.len)) eager_blocked_ = true;
}

void node_connection::flush() {
    if (state_ != state::ready || writing_ || out_.empty()) return;
    uv_buf_t buf = uv_buf_init(out_.data(), static_cast<unsigned>(out_.size()));
    counters_.writes.fetch_add(1, std::memory_order_relaxed);
    const int written = uv_try_write(stream(), &buf, 1);
    if (written == static_cast<int>(out_.size())) {
        out_.clear();
        return;
    }
    if (written < 0 && written != UV_EAGAIN) {
        disconnect(std::string{"write failed: "} + uv_strerror(written));
        return;
    }
    // The kernel took part of it (or nothing): hand the rest to libuv.
    writing_buf_.swap(out_);
    if (written > 0) writing_buf_.erase(0, static_cast<std::size_t>(written));
    out_.clear();
    writing_ = true;
    counters_.writes.fetch_add(1, std::memory_order_relaxed);
    write_req_.data = this;
    buf = uv_buf_init(writing_buf_.data(), static_cast<unsigned>(writing_buf_.size()));
    const int rc = uv_write(&write_req_, stream(), &buf, 1, &node_connection::on_write);
    if (rc != 0) {
        writing_ = false;
        disconnect(std::string{"write failed: "} + uv_strerror(rc));
    }
}

void node_connection::on_write(uv_write_t* req, int status) {
    auto& self = *static_cast<node_connection*>(req->data);
    self.writing_ = false;
    // Only a burst the kernel could not take at once comes here: give its
    // memory back rather than keep the largest burst's size for good.
    if (self.writing_buf_.capacity() > eager_write_bytes) {
        std::string{}.swap(self.writing_buf_);
    } else {
        self.writing_buf_.clear();
    }
    if (status == UV_ECANCELED) return;  // the stream is closing
    if (status != 0) {
        self.disconnect(std::string{"write failed: "} + uv_strerror(status));
        return;
    }
    self.flush();
}

// ---- replies ------------------------------------------------------------------------------

void node_connection::on_alloc(uv_handle_t* handle, std::size_t, uv_buf_t* buf) {
    auto& self = *static_cast<node_connection*>(handle->data);
    *buf = uv_buf_init(self.read_buf_, sizeof self.read_buf_);
}

void node_connection::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t*) {
    auto& self = *static_cast<node_connection*>(stream->data);
    if (nread > 0) {
        self.feed(self.read_buf_, static_cast<std::size_t>(nread));
    } else if (nread < 0) {
        self.disconnect(nread == UV_EOF
                            ? std::string{"connection closed by the server"}
                            : std::string{"read failed: "} + uv_strerror(static_cast<int>(nread)));
    }
}

void node_connection::feed(const char* data, std::size_t len) {
    if (!reader_.feed(data, len)) {
        disconnect("protocol error: " + reader_.error());
        return;
    }
    // No reply of ours comes anywhere near this; a node that sends more in one
    // reply is broken or hostile, and must not make us buffer without bound
    // (hiredis 0.14's reader has no limit of its own).
    if (reader_.unparsed() > reply_reader::max_bytes) {
        disconnect("protocol error: a reply larger than 16 MiB");
        return;
    }
    const std::uint64_t epoch = epoch_;
    while (epoch == epoch_) {
        redisReply* reply = nullptr;
        if (!reader_.next(&reply)) {
            disconnect("protocol error: " + reader_.error());
            return;
        }
        if (reply == nullptr) return;  // need more bytes
        if (!channel_.empty()) {
            if (const redisReply* payload = pushed_message(reply)) {
                // Pushed, not a reply: it takes no slot in the FIFO.
                const std::string text{reply_text(payload)};
                freeReplyObject(reply);
                if (on_message_) on_message_(text);
                continue;
            }
        }
        if (pending_.empty()) {
            freeReplyObject(reply);
            disconnect("protocol error: a reply nobody asked for");
            return;
        }
        const request req = pending_.front();
        pending_.pop_front();
        ++front_number_;
        if (!req.expired && req.sink != nullptr) {
            req.sink->on_reply(req.tag, reply_event{request_status::reply, reply, {}});
        }
        freeReplyObject(reply);
    }
}

// ---- deadlines ----------------------------------------------------------------------------

void node_connection::arm_deadline(std::uint64_t deadline) {
    if (uv_is_active(as_handle(&deadline_timer_)) != 0 && deadline_armed_ <= deadline) return;
    deadline_armed_ = deadline;
    const std::uint64_t now = uv_now(loop_);
    uv_timer_start(
        &deadline_timer_,
        [](uv_timer_t* t) { static_cast<node_connection*>(t->data)->on_deadline(); },
        deadline > now ? deadline - now : 0, 0);
}

void node_connection::on_deadline() {
    const std::uint64_t now = uv_now(loop_);
    const std::uint64_t epoch = epoch_;
    std::uint64_t next = UINT64_MAX;
    // Indexes, not iterators: a sink may queue new requests while we walk.
    const std::size_t n = pending_.size();
    for (std::size_t i = 0; i < n && epoch == epoch_; ++i) {
        request& req = pending_[i];
        if (req.expired) continue;
        if (req.deadline > now) {
            next = std::min(next, req.deadline);
            continue;
        }
        req.expired = true;
        counters_.timeouts.fetch_add(1, std::memory_order_relaxed);
        if (req.sink != nullptr) {
            const std::string cause =
                "no reply within " + std::to_string(config_.request_timeout.count()) + " ms";
            req.sink->on_reply(req.tag, reply_event{request_status::timeout, nullptr, cause});
        }
    }
    if (epoch != epoch_ || state_ == state::stopping || state_ == state::stopped) return;
    // A node that owes replies for much longer than any lock lives is not coming
    // back on this connection: recycle it (the keys expire by their TTL anyway).
    const std::uint64_t stale_after =
        std::max<std::uint64_t>(2000, 20 * ms(config_.request_timeout));
    if (!pending_.empty() && pending_.front().expired &&
        now >= pending_.front().deadline + stale_after) {
        disconnect("no reply for " + std::to_string(now - pending_.front().deadline) + " ms");
        return;
    }
    for (std::size_t i = n; i < pending_.size(); ++i) {
        if (!pending_[i].expired) next = std::min(next, pending_[i].deadline);
    }
    if (!pending_.empty() && pending_.front().expired) next = std::min(next, now + stale_after);
    if (next != UINT64_MAX) arm_deadline(next);
}

void node_connection::fail_pending(request_status status, std::string_view cause) {
    std::deque<request> failed;
    failed.swap(pending_);
    front_number_ += static_cast<std::uint32_t>(failed.size());
    for (const auto& req : failed) {
        if (!req.expired && req.sink != nullptr)
            req.sink->on_reply(req.tag, reply_event{status, nullptr, cause});
    }
}

// ---- closing ------------------------------------------------------------------------------

void node_connection::close(std::function<void()> done) {
    // Idempotent: a second close waits for the first, or reports at once.
    if (state_ == state::stopped) {
        if (done) done();
        return;
    }
    if (state_ == state::stopping) {
        on_closed_ = [first = std::move(on_closed_), second = std::move(done)] {
            if (first) first();
            if (second) second();
        };
        return;
    }
    count_connected(false);
    state_ = state::stopping;
    on_closed_ = std::move(done);
    out_.clear();
    fail_pending(request_status::stopped, "client stopped");
    deliver_deferred();
    if (resolving_) uv_cancel(reinterpret_cast<uv_req_t*>(&resolve_req_));
    const auto closed = [](uv_handle_t* h) {
        auto& self = *static_cast<node_connection*>(h->data);
        --self.open_handles_;
        self.maybe_closed();
    };
    uv_close(as_handle(&connect_timer_), closed);
    uv_close(as_handle(&deadline_timer_), closed);
    if (stream_open_ && uv_is_closing(as_handle(stream())) == 0) {
        uv_close(as_handle(stream()), [](uv_handle_t* h) {
            static_cast<node_connection*>(h->data)->on_stream_closed();
        });
    }
}

void node_connection::maybe_closed() {
    if (state_ != state::stopping || open_handles_ > 0 || stream_open_ || resolving_) return;
    state_ = state::stopped;
    if (on_closed_) std::exchange(on_closed_, nullptr)();
}

}  // namespace redlock::detail
