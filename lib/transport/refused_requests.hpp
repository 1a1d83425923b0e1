#pragma once

#include "sansio/reply.hpp"
#include "sansio/request_fifo.hpp"

#include <cstdint>
#include <deque>
#include <string>

namespace redlock::detail {

/// Requests a node connection refused (it was down, or closing): their
/// failures wait here for the next flush, so that a sink never hears of one
/// inside the send() that made it.
class refused_requests {
public:
    void add(reply_sink* sink, std::uint32_t tag, request_status status,
             const request_watch& watch = {}) {
        queue_.push_back(refusal{sink, tag, status, watch});
    }

    /// Fails every refused request: a stopped one as "client stopped", the
    /// others with `cause`, read at each failure (a sink may change it).
    /// Inline: every flush asks, and there is seldom anything to deliver.
    void deliver(const std::string& cause) {
        if (!queue_.empty()) deliver_all(cause);
    }

private:
    void deliver_all(const std::string& cause);

    struct refusal {
        reply_sink* sink;
        std::uint32_t tag;
        request_status status;
        request_watch watch;
    };
    std::deque<refusal> queue_;
};

}  // namespace redlock::detail
