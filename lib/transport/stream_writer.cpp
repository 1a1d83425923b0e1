#include "transport/stream_writer.hpp"

#include <string>
#include <utility>

namespace redlock::detail {
namespace {

constexpr std::size_t batch_bytes = connection_fsm::eager_write_bytes;

}  // namespace

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

auto stream_writer::flush(uv_stream_t* stream, bool commands) -> bool {
    std::string& plain = commands ? commands_ : handshake_;
    if (tls_.active()) {
        failure_ = tls_.encrypt_pending(plain);
        if (!failure_.empty()) return false;
    }
    std::string& out = tls_.active() ? tls_.wire() : plain;
    if (in_flight_ || out.empty()) return true;
    uv_buf_t buf = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
    writes_.fetch_add(1, std::memory_order_relaxed);
    const int written = uv_try_write(stream, &buf, 1);
    if (written == static_cast<int>(out.size())) {
        out.clear();
        return true;
    }
    if (written < 0 && written != UV_EAGAIN) return failed("write failed: ", written);
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
        return failed("write failed: ", rc);
    }
    return true;
}

auto stream_writer::failed(const char* what, int error) -> bool {
    failure_ = std::string{what} + uv_strerror(error);
    return false;
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
