#pragma once

// The hand-off across clients, as one attempt of a waiter counts it (README,
// "The hand-off"): a release of any client sets the key to the value this
// attempt offered where the waiter is first in line, and tells it by pub/sub.
// A node's grant counts once both are known: its answer to this attempt queued
// us there (so the offer it handed is this attempt's, written after the
// attempt was sent: the validity counts from then), and its message came. They
// arrive on two connections, in either order. No I/O, no clock.

#include <cstddef>
#include <vector>

namespace redlock::detail {

class handoff_grants {
public:
    /// A new attempt on `nodes` nodes: nothing queued or heard.
    void reset(std::size_t nodes) {
        queued_.assign(nodes, false);
        heard_.assign(nodes, false);
        count_ = 0;
    }
    /// `node`'s answer queued us (this attempt's offer is there). True if its
    /// hand-off was heard already and counts now.
    auto on_queued(std::size_t node) -> bool { return mark(queued_, heard_, node); }
    /// `node` said it handed us this attempt's value. True if it counts now (its
    /// answer queued us); false before that answer, or heard already.
    auto on_heard(std::size_t node) -> bool { return mark(heard_, queued_, node); }
    /// Whether `node`'s hand-off counts.
    [[nodiscard]] auto counted(std::size_t node) const noexcept -> bool {
        return node < queued_.size() && queued_[node] && heard_[node];
    }
    /// Nodes whose hand-off counts.
    [[nodiscard]] auto count() const noexcept -> std::size_t { return count_; }

private:
    auto mark(std::vector<bool>& mine, const std::vector<bool>& other, std::size_t node) -> bool {
        if (node >= mine.size() || mine[node]) return false;
        mine[node] = true;
        if (!other[node]) return false;
        ++count_;
        return true;
    }

    std::vector<bool> queued_;
    std::vector<bool> heard_;
    std::size_t count_ = 0;
};

}  // namespace redlock::detail
