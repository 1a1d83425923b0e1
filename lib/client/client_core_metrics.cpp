// client::metrics(): the recorders' atomics read into a snapshot, from any thread.
#include "client/client_core.hpp"

#include <atomic>

namespace redlock::detail {

auto client_core::metrics() const -> metrics_snapshot {
    metrics_snapshot m;
    const latency_histograms& latency = counters_.latency;
    for (std::size_t i = 0; i < m.acquire.size(); ++i) m.acquire[i] = latency.acquire[i].snapshot();
    m.release = latency.release.snapshot();
    m.extend = latency.extend.snapshot();
    m.wait = latency.wait.snapshot();
    // nodes_ is fixed at construction: its names and counters are safe to read here.
    m.nodes.reserve(nodes_.size());
    for (const auto& n : nodes_) {
        const node_counters& c = n->metrics();
        m.nodes.push_back(
            node_metrics{.node = n->name(),
                         .up = c.up.load(std::memory_order_relaxed),
                         .rtt_seconds = c.rtt_seconds(),
                         .timeouts = c.timeouts.load(std::memory_order_relaxed),
                         .unreachable = c.unreachable.load(std::memory_order_relaxed),
                         .error_replies = c.error_replies.load(std::memory_order_relaxed),
                         .connects = c.connects.load(std::memory_order_relaxed)});
    }
    m.locks_held = counters_.locks_held->load(std::memory_order_relaxed);
    m.renewals = counters_.renewals.load(std::memory_order_relaxed);
    m.locks_lost = counters_.locks_lost.load(std::memory_order_relaxed);
    m.handoffs = counters_.handoffs.load(std::memory_order_relaxed);
    m.attempts = counters_.attempts.load(std::memory_order_relaxed);
    m.waiters = waiters_.waiter_count();
    return m;
}

}  // namespace redlock::detail
