#pragma once

#include "sansio/connection_fsm.hpp"
#include "transport/tls_channel.hpp"
#include "transport/uv_handle.hpp"

#include <uv.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace redlock::detail {

/// Where a stream_writer reports the end of a write that libuv finished for it.
class write_listener {
public:
    /// A uv_write ended with `status`: 0, a libuv error, or UV_ECANCELED
    /// when the stream closed first.
    virtual void on_written(int status) = 0;

protected:
    write_listener() = default;
    write_listener(const write_listener&) = default;
    auto operator=(const write_listener&) -> write_listener& = default;
    ~write_listener() = default;
};

/// The write side of a node connection: the bytes waiting for the kernel and
/// the writes that hand them over, through TLS when the connection has it.
/// The handshake goes first, on its own, until it is answered; commands wait
/// in their own buffer meanwhile. The kernel takes what it can at once
/// (uv_try_write); the rest goes to one uv_write, the only write in flight.
/// Failures come back as values for the connection to report.
class stream_writer {
public:
    /// `tls` and `writes` (the write system calls counter) outlive this.
    stream_writer(write_listener& listener, tls_channel& tls, std::atomic<std::uint64_t>& writes)
        : write_{*this}, listener_{listener}, tls_{tls}, writes_{writes} {}
    stream_writer(const stream_writer&) = delete;
    auto operator=(const stream_writer&) -> stream_writer& = delete;
    ~stream_writer() = default;

    /// Appends one encoded command (every request: inline).
    void queue(std::string_view encoded) {
        constexpr std::size_t batch = connection_fsm::eager_write_bytes;
        if (commands_.size() + encoded.size() > commands_.capacity() &&
            commands_.capacity() < batch) {
            commands_.reserve(batch);  // not doubled past it on the way up
        }
        commands_.append(encoded);
    }
    /// The handshake's bytes, written before any command.
    [[nodiscard]] auto handshake() noexcept -> std::string& { return handshake_; }
    /// Commands queued and not yet handed to the kernel.
    [[nodiscard]] auto buffered() const noexcept -> std::size_t { return commands_.size(); }
    /// No write is in flight, and the kernel took all of this turn's last eager write.
    [[nodiscard]] auto idle() const noexcept -> bool { return !in_flight_ && !kernel_full_; }

    /// Hands the queued commands to the kernel now, as much as it takes (a
    /// burst). An error is left for the next flush, which meets it again.
    void write_eagerly(uv_stream_t* stream);
    /// Writes the handshake, or once `commands` (it was answered) the
    /// commands. False on a failure: failure() says why.
    [[nodiscard]] auto flush(uv_stream_t* stream, bool commands) -> bool;
    /// Why the last flush() failed.
    [[nodiscard]] auto failure() const noexcept -> const std::string& { return failure_; }
    /// A new loop turn: the kernel may have room again.
    void new_turn() noexcept { kernel_full_ = false; }

    /// Drops everything not written: it must not reach the node any more.
    void drop() noexcept;
    /// The stream closed: no write is in flight any more.
    void stream_closed() noexcept;

private:
    using write_request = uv_request<uv_write_t, stream_writer>;
    static void on_write(uv_write_t* req, int status);
    /// Records `what` and libuv's `error` as the failure; false.
    auto failed(const char* what, int error) -> bool;

    write_request write_;
    write_listener& listener_;
    tls_channel& tls_;
    std::atomic<std::uint64_t>& writes_;
    std::string handshake_;  // the handshake, written before anything else
    std::string commands_;   // encoded commands not yet handed to the kernel
    std::string writing_;    // bytes of the uv_write in flight
    std::string failure_;
    bool in_flight_ = false;
    bool kernel_full_ = false;  // an eager write this turn found the kernel full
};

}  // namespace redlock::detail
