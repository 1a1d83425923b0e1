#pragma once

#include "sansio/request_fifo.hpp"
#include "transport/metrics_recorder.hpp"
#include "transport/reply_reader.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace redlock::detail {

/// The read side of a node connection: parses what the node sends and hands
/// each reply to the request it answers, the oldest in the FIFO (Redis
/// answers in order). On a subscriber connection, a pushed pub/sub message
/// takes no slot: it goes to the message callback.
class reply_router {
public:
    /// `pending` and `metrics` are the connection's, and outlive this.
    reply_router(request_fifo& pending, node_counters& metrics) noexcept
        : pending_{pending}, metrics_{metrics} {}

    /// Makes this a subscriber's: each message pushed on `channel` goes to
    /// `on_message(payload)`.
    void subscribe(std::string channel, std::function<void(std::string_view)> on_message);
    [[nodiscard]] auto channel() const noexcept -> const std::string& { return channel_; }

    /// Parses `len` bytes and completes the requests they answer. False on a
    /// protocol error, which must drop the connection: failure() says what.
    /// Stops early when a request's callback failed the connection (the FIFO
    /// was emptied).
    [[nodiscard]] auto feed(const char* data, std::size_t len) -> bool;
    [[nodiscard]] auto failure() const noexcept -> const std::string& { return failure_; }
    /// Drops what was read and not parsed: the stream it came from is gone.
    void reset() { reader_.reset(); }

private:
    /// Records "protocol error: <what>" as the failure; false.
    auto protocol_error(std::string_view what) -> bool;

    request_fifo& pending_;
    node_counters& metrics_;
    reply_reader reader_;
    std::string channel_;
    std::function<void(std::string_view)> on_message_;
    std::string failure_;
};

}  // namespace redlock::detail
