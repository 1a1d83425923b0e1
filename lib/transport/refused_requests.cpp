#include "transport/refused_requests.hpp"

#include <cstdint>
#include <string_view>

namespace redlock::detail {

void refused_requests::deliver_all(const std::string& cause) {
    // A sink may refuse more while we deliver: take a batch at a time.
    while (!queue_.empty()) {
        std::deque<refusal> batch;
        batch.swap(queue_);
        for (const refusal& r : batch) {
            const std::string_view why =
                r.status == request_status::stopped ? "client stopped" : std::string_view{cause};
            // Never queued: no number, nothing kept.
            hand_on(r.sink, r.tag, r.watch, UINT32_MAX, {}, reply_event{r.status, nullptr, why});
        }
    }
}

}  // namespace redlock::detail
