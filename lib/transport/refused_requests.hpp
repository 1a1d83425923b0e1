#pragma once

#include "sansio/reply.hpp"

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

namespace redlock::detail {

/// Requests a node connection refused (it was down, or closing): their
/// failures wait here for the next flush, so that a sink never hears of one
/// inside the send() that made it.
class refused_requests {
public:
    void add(reply_sink* sink, std::uint32_t tag, request_status status) {
        queue_.push_back(refusal{sink, tag, status});
    }

    /// Fails every refused request: a stopped one as "client stopped", the
    /// others with `cause`, read at each failure (a sink may change it).
    void deliver(const std::string& cause) {
        // A sink may refuse more while we deliver: take a batch at a time.
        while (!queue_.empty()) {
            std::deque<refusal> batch;
            batch.swap(queue_);
            for (const refusal& r : batch) {
                if (r.sink == nullptr) continue;
                const std::string_view why = r.status == request_status::stopped
                                                 ? "client stopped"
                                                 : std::string_view{cause};
                r.sink->on_reply(r.tag, reply_event{r.status, nullptr, why});
            }
        }
    }

private:
    struct refusal {
        reply_sink* sink;
        std::uint32_t tag;
        request_status status;
    };
    std::deque<refusal> queue_;
};

}  // namespace redlock::detail
