#include "transport/stream_writer.hpp"

#include "sansio/connection_fsm.hpp"

#include <string>
#include <utility>

namespace redlock::detail {
namespace {

constexpr std::size_t batch_bytes = connection_fsm::eager_write_bytes;

}  // namespace

void stream_writer::queue(std::string_view encoded) {
    if (commands_.size() + encoded.size() > commands_.capacity() &&
        commands_.capacity() < batch_bytes) {
        commands_.reserve(batch_bytes);  // not doubled past it on the way up
    }
    commands_.append(encoded);
}

void stream_writer::write_eagerly(uv_stream_t* stream) {
    // A kernel that took less than all has no room: no more tries this turn
    // (the flush hands the rest to libuv).
    if (tls_.active() && !tls_.encrypt_pending(commands_).empty()) return;
    std::string& out = tls_.active() ? tls_.wire() : commands_;
    uv_buf_t buf = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
    writes_.fetch_add(1, std::memory_order_relaxed);
    const int written = uv_try_write(stream, &buf, 1);
    if (written > 0) out.erase(0, static_cast<std::size_t>(written));
    if (written < static_cast<int>(buf.len)) kernel_full_ = true;
}

auto stream_writer::flush(uv_stream_t* stream, bool commands) -> std::string {
    std::string& plain = commands ? commands_ : handshake_;
    if (tls_.active()) {
        std::string failure = tls_.encrypt_pending(plain);
        if (!failure.empty()) return failure;
    }
    std::string& out = tls_.active() ? tls_.wire() : plain;
    if (in_flight_ || out.empty()) return {};
    uv_buf_t buf = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
    writes_.fetch_add(1, std::memory_order_relaxed);
    const int written = uv_try_write(stream, &buf, 1);
    if (written == static_cast<int>(out.size())) {
        out.clear();
        return {};
    }
    if (written < 0 && written != UV_EAGAIN)
        return std::string{"write failed: "} + uv_strerror(written);
    // The kernel took part of it (or nothing): hand the rest to libuv.
    writing_.swap(out);
    if (written > 0) writing_.erase(0, static_cast<std::size_t>(written));
    out.clear();
    in_flight_ = true;
    writes_.fetch_add(1, std::memory_order_relaxed);
    buf = uv_buf_init(writing_.data(), static_cast<unsigned>(writing_.size()));
    const int rc = uv_write(write_.get(), stream, &buf, 1, &stream_writer::on_write);
    if (rc != 0) {
        in_flight_ = false;
        return std::string{"write failed: "} + uv_strerror(rc);
    }
    return {};
}

void stream_writer::on_write(uv_write_t* req, int status) {
    stream_writer& self = write_request::owner_of(req);
    self.in_flight_ = false;
    // Only a burst the kernel could not take at once comes here: give its
    // memory back rather than keep the largest burst's size for good.
    if (self.writing_.capacity() > batch_bytes) {
        std::string{}.swap(self.writing_);
    } else {
        self.writing_.clear();
    }
    self.listener_.on_written(status);
}

void stream_writer::drop() noexcept {
    commands_.clear();
    handshake_.clear();
}

void stream_writer::stream_closed() noexcept {
    in_flight_ = false;
    writing_.clear();
}

}  // namespace redlock::detail
