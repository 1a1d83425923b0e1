#include "sansio/extend_decision.hpp"

#include "sansio/timing.hpp"

#include <algorithm>

namespace redlock::detail {

using std::chrono::milliseconds;

auto extend_decision::on_answer(std::size_t node, extend_answer a) -> quorum_tally::verdict {
    if (!open_ || node >= missing_.size()) return quorum_tally::verdict::pending;
    quorum_tally::verdict v = quorum_tally::verdict::pending;
    switch (a) {
        case extend_answer::extended:
            v = tally_.yes();
            break;
        case extend_answer::missing:
            // Never counted, even if repaired later: a missing key is not ours.
            missing_[node] = true;
            v = tally_.refused();
            break;
        case extend_answer::other_value:
            v = tally_.refused();
            break;
        case extend_answer::failed:
            v = tally_.failed();
            break;
    }
    if (v != quorum_tally::verdict::pending) open_ = false;
    return v;
}

auto extend_decision::failure() const noexcept -> errc {
    const std::size_t n =
        tally_.yes_count() + tally_.refused_count() + tally_.failed_count() + tally_.pending();
    return tally_.refused_count() > n - tally_.needed() ? errc::not_held : errc::quorum_unreachable;
}

auto extend_decision::new_deadline(const deadline_inputs& in) -> deadline_outcome {
    // Extending a lock whose validity has ended would be acquiring it afresh
    // without the checks of an acquisition.
    if (!in.adopted && in.now >= in.old_deadline)
        return {std::nullopt, "the majority confirmed only after the validity had ended"};
    // What the nodes hold, not what was asked: an adopted lock extended with a
    // shorter ttl keeps its longer TTL on the nodes, and its old deadline is
    // unknown here. The TTL was read after `started`, so all the elapsed time
    // is taken off: a lower bound.
    const milliseconds left = in.confirmed_left.value_or(in.ttl);
    const milliseconds v = validity(left, in.now - in.started, in.drift_factor, in.drift_floor);
    if (in.adopted && v <= milliseconds{0})
        return {std::nullopt, "confirmed, but with no validity left after elapsed time and drift"};
    // The script never shortens a TTL on a node, so neither does this.
    return {in.adopted ? in.now + v : std::max(in.old_deadline, in.now + v), nullptr};
}

}  // namespace redlock::detail
