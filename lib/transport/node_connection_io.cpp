// The request path of a node connection: queueing, writing, reading replies and
// per-request deadlines. The lifecycle (connect, handshake, failure, close) is
// in node_connection.cpp; what it decides is connection_fsm's.
#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "transport/write_batcher.hpp"
#include "transport/node_connection.hpp"
#include "transport/os_random.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace redlock::detail {
namespace {

/// A pub/sub push: ["message", channel, payload].
auto pushed_message(const reply* r) -> const reply* {
    if (!is_array(r, 3) || reply_text(r->elements[0]) != "message") return nullptr;
    return r->elements[2];
}

}  // namespace

// ---- requests -----------------------------------------------------------------------------

void node_connection::send(std::span<const std::string_view> argv, reply_sink* sink,
                           std::uint32_t tag) {
    send(encoded_command{argv}.bytes(), sink, tag);
}

auto node_connection::send(std::string_view encoded, reply_sink* sink, std::uint32_t tag)
    -> std::uint32_t {
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    if (fsm_.accepts_requests()) {
        const bool ready = fsm_.ready();
        if (ready && !writing_ && !eager_blocked_ && !out_.empty() &&
            out_.size() + encoded.size() > eager_write_bytes) {
            // A burst is handed to the kernel as it grows, so the bytes waiting
            // here stay within one write's worth however many locks are in flight.
            write_eagerly();
        }
        if (out_.size() + encoded.size() > out_.capacity() && out_.capacity() < eager_write_bytes) {
            out_.reserve(eager_write_bytes);  // not doubled past it on the way up
        }
        out_.append(encoded);
        // Queued while connecting, a request also waits for the connection
        // (and its handshake): a fresh client's first attempt is not lost to
        // the connect time. Its deadline allows for a whole connect timeout,
        // which bounds connect and handshake together: if the node does not
        // answer by then, the request fails as unreachable, never written.
        const std::uint64_t setup = ready ? 0 : loop_ms(config_.connect_timeout);
        const std::uint64_t deadline = uv_now(loop_) + setup + loop_ms(config_.request_timeout);
        const auto number = pending_.push(sink, tag, deadline);
        // Only on a ready connection: the round trip must not include a connect.
        if (ready) metrics_.on_sent(number, uv_now(loop_));
        arm_deadline(deadline);
        if (ready) mark_dirty();
        return number;
    }
    deferred_.push_back(deferred_failure{
        sink, tag, fsm_.stopping() ? request_status::stopped : request_status::unreachable});
    if (!fsm_.stopping()) metrics_.unreachable.fetch_add(1, std::memory_order_relaxed);
    mark_dirty();  // failures are delivered on the next hook, never inside send()
    return no_request;
}

auto node_connection::disown(std::uint32_t number, const reply_sink* sink) noexcept -> bool {
    return number != no_request && pending_.disown(number, sink);
}

void node_connection::mark_dirty() {
    if (dirty_ || fsm_.current() == connection_fsm::state::stopped) return;
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
    // An error is left for the hook's flush to meet again: a disconnect here
    // would fail requests inside send(). A kernel that took less than all has
    // no room: no more tries this turn (the flush hands the rest to libuv).
    if (tls_ && !seal(/*report=*/false)) return;
    std::string& out = tls_ ? tls_wire_ : out_;
    uv_buf_t buf = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
    counters_.writes.fetch_add(1, std::memory_order_relaxed);
    const int written = uv_try_write(stream(), &buf, 1);
    if (written > 0) out.erase(0, static_cast<std::size_t>(written));
    if (written < static_cast<int>(buf.len)) eager_blocked_ = true;
}

auto node_connection::writable() noexcept -> std::string& {
    return fsm_.ready() ? out_ : handshake_out_;
}

void node_connection::flush() {
    const auto s = fsm_.current();
    if (s != connection_fsm::state::ready && s != connection_fsm::state::handshaking) return;
    if (tls_ && !seal(/*report=*/true)) return;
    std::string& out = tls_ ? tls_wire_ : writable();
    if (writing_ || out.empty()) return;
    uv_buf_t buf = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
    counters_.writes.fetch_add(1, std::memory_order_relaxed);
    const int written = uv_try_write(stream(), &buf, 1);
    if (written == static_cast<int>(out.size())) {
        out.clear();
        return;
    }
    if (written < 0 && written != UV_EAGAIN) {
        dispatch({connection_fsm::event::transport_error,
                  std::string{"write failed: "} + uv_strerror(written), 0, rng_.next()});
        return;
    }
    // The kernel took part of it (or nothing): hand the rest to libuv.
    writing_buf_.swap(out);
    if (written > 0) writing_buf_.erase(0, static_cast<std::size_t>(written));
    out.clear();
    writing_ = true;
    counters_.writes.fetch_add(1, std::memory_order_relaxed);
    write_req_.data = this;
    buf = uv_buf_init(writing_buf_.data(), static_cast<unsigned>(writing_buf_.size()));
    const int rc = uv_write(&write_req_, stream(), &buf, 1, &node_connection::on_write);
    if (rc != 0) {
        writing_ = false;
        dispatch({connection_fsm::event::transport_error,
                  std::string{"write failed: "} + uv_strerror(rc), 0, rng_.next()});
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
        self.dispatch({connection_fsm::event::transport_error,
                       std::string{"write failed: "} + uv_strerror(status), 0, self.rng_.next()});
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
        self.heard_from_server_ = true;
        if (self.tls_) {
            self.feed_tls(self.read_buf_, static_cast<std::size_t>(nread));
        } else {
            self.feed(self.read_buf_, static_cast<std::size_t>(nread));
        }
    } else if (nread < 0) {
        std::string cause =
            nread == UV_EOF ? std::string{"connection closed by the server"}
                            : std::string{"read failed: "} + uv_strerror(static_cast<int>(nread));
        // A TLS port drops a plain client at its first command, without a word.
        if (!self.tls_ && !self.heard_from_server_ &&
            self.fsm_.current() == connection_fsm::state::handshaking) {
            cause +=
                " before any answer (a TLS port? then give the node TLS: \"tls\" in the config)";
        }
        self.dispatch(
            {connection_fsm::event::transport_error, std::move(cause), 0, self.rng_.next()});
    }
}

void node_connection::feed(const char* data, std::size_t len) {
    if (!reader_.feed(data, len)) {
        fail_transport("protocol error: " + reader_.error());
        return;
    }
    // No reply of ours comes anywhere near this; a node that sends more in one
    // reply is broken or hostile, and must not make us buffer without bound
    // (hiredis 0.14's reader has no limit of its own).
    if (reader_.unparsed() > reply_reader::max_bytes) {
        fail_transport("protocol error: a reply larger than 16 MiB");
        return;
    }
    const std::uint64_t epoch = epoch_;
    while (epoch == epoch_) {
        reply_ptr answer;
        if (!reader_.next(answer)) {
            fail_transport("protocol error: " + reader_.error());
            return;
        }
        if (answer == nullptr) return;  // need more bytes
        if (!channel_.empty()) {
            if (const reply* payload = pushed_message(answer.get())) {
                // Pushed, not a reply: it takes no slot in the FIFO.
                const std::string text{reply_text(payload)};
                answer.reset();
                if (on_message_) on_message_(text);
                continue;
            }
        }
        if (pending_.empty()) {
            answer.reset();
            fail_transport("protocol error: a reply nobody asked for");
            return;
        }
        if (is_error(answer.get()) && !is_noscript(answer.get()))
            metrics_.error_replies.fetch_add(1, std::memory_order_relaxed);
        const std::uint32_t number = pending_.front_number();
        const request_fifo::request req = pending_.pop_front();
        metrics_.on_answered(number, !req.expired);
        if (!req.expired && req.sink != nullptr) {
            req.sink->on_reply(req.tag, reply_event{request_status::reply, answer.get(), {}});
        }
    }
}

// ---- TLS ----------------------------------------------------------------------------------

auto node_connection::seal(bool report) -> bool {
    std::string& plain = writable();
    if (tls_->established() && !plain.empty()) {
        if (tls_->write(plain)) plain.clear();
    }
    if (!tls_->error().empty()) {
        if (report) fail_transport("TLS: " + tls_->error());
        return false;
    }
    tls_->take_output(tls_wire_);
    return true;
}

void node_connection::feed_tls(const char* data, std::size_t len) {
    if (!tls_->feed(data, len)) {
        fail_transport("TLS: " + tls_->error());
        return;
    }
    if (!tls_->established()) {
        if (!tls_->handshake()) {
            fail_transport("TLS handshake failed: " + tls_->error());
            return;
        }
        // Handshake records to send, and once it is done, the Redis handshake.
        mark_dirty();
        if (!tls_->established()) return;
    }
    tls_plain_.clear();
    const bool ok = tls_->read(tls_plain_);
    if (!tls_plain_.empty()) {
        const std::uint64_t epoch = epoch_;
        feed(tls_plain_.data(), tls_plain_.size());  // copied by the reader at once
        if (epoch != epoch_ || !tls_) return;        // failed: the session is gone
    }
    // An alert after the handshake (TLS 1.3 refuses a client certificate
    // only then) comes here, with the reason the server gave.
    if (!ok) {
        fail_transport("TLS: " + tls_->error());
        return;
    }
    // TLS 1.3 may answer a read (a key update): let the next flush send it.
    // Nothing to send, no flush: the replies' own requests ask for theirs.
    if (tls_->has_output()) mark_dirty();
}

// ---- deadlines ----------------------------------------------------------------------------

void node_connection::arm_deadline(std::uint64_t deadline) {
    if (uv_is_active(as_uv_handle(&deadline_timer_)) != 0 && deadline_armed_ <= deadline) return;
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
        request_fifo::request& req = pending_[i];
        if (req.expired) continue;
        if (req.deadline > now) {
            next = std::min(next, req.deadline);
            continue;
        }
        req.expired = true;
        counters_.timeouts.fetch_add(1, std::memory_order_relaxed);
        metrics_.timeouts.fetch_add(1, std::memory_order_relaxed);
        if (req.sink != nullptr) {
            const std::string cause =
                "no reply within " + std::to_string(config_.request_timeout.count()) + " ms";
            req.sink->on_reply(req.tag, reply_event{request_status::timeout, nullptr, cause});
        }
    }
    if (epoch != epoch_ || fsm_.stopping()) return;
    // A node that owes replies for much longer than any lock lives is not coming
    // back on this connection: recycle it (the keys expire by their TTL anyway).
    const std::uint64_t stale_after =
        std::max<std::uint64_t>(2000, 20 * loop_ms(config_.request_timeout));
    if (!pending_.empty() && pending_.front().expired &&
        now >= pending_.front().deadline + stale_after) {
        fail_transport("no reply for " + std::to_string(now - pending_.front().deadline) + " ms");
        return;
    }
    for (std::size_t i = n; i < pending_.size(); ++i) {
        if (!pending_[i].expired) next = std::min(next, pending_[i].deadline);
    }
    if (!pending_.empty() && pending_.front().expired) next = std::min(next, now + stale_after);
    if (next != UINT64_MAX) arm_deadline(next);
}

void node_connection::fail_transport(std::string cause) {
    dispatch({connection_fsm::event::transport_error, std::move(cause), 0, rng_.next()});
}

}  // namespace redlock::detail
