#include "transport/refused_requests.hpp"

#include <string_view>

namespace redlock::detail {

void refused_requests::deliver_all(const std::string& cause) {
    // A sink may refuse more while we deliver: take a batch at a time.
    while (!queue_.empty()) {
        std::deque<refusal> batch;
        batch.swap(queue_);
        for (const refusal& r : batch) {
            if (r.sink == nullptr) continue;
            const std::string_view why =
                r.status == request_status::stopped ? "client stopped" : std::string_view{cause};
            r.sink->on_reply(r.tag, reply_event{r.status, nullptr, why});
        }
    }
}

}  // namespace redlock::detail
