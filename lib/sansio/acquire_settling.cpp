#include "sansio/acquire_settling.hpp"

namespace redlock::detail {

auto settle_hold::on_won(const settling_nodes* settling, const node_outcomes& heard,
                         std::chrono::milliseconds took, std::chrono::milliseconds limit) -> step {
    bool waiting_for_one = false;
    if (settling != nullptr && !expired_ && took < limit) {
        for (std::size_t i = 0; i < heard.size() && !waiting_for_one; ++i)
            waiting_for_one = heard.status(i) == node_status::cancelled && settling->settling(i);
    }
    step s;
    if (!waiting_for_one) {
        s.cancel_timer = holding_;
        holding_ = false;
        return s;
    }
    s.wait = true;
    if (!holding_) s.grace = limit - took;
    holding_ = true;
    return s;
}

auto settle_hold::end(bool timer) noexcept -> bool {
    const bool was = holding_;
    holding_ = false;
    if (timer) expired_ = true;
    return was;
}

}  // namespace redlock::detail
