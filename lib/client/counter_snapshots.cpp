#include "client/counter_snapshots.hpp"

#include "operations/waiter_registry.hpp"

#include <atomic>

namespace redlock::detail {

auto read_stats(const op_counters& ops, const connection_counters& connections,
                const std::vector<std::unique_ptr<quorum_member>>& members,
                const waiter_registry& waiters, std::size_t operations) -> client_stats {
    constexpr auto relaxed = std::memory_order_relaxed;
    client_stats s;
    s.acquire_calls = ops.acquire_calls.load(relaxed);
    s.acquired = ops.acquired.load(relaxed);
    s.acquire_failures = ops.acquire_failures.load(relaxed);
    s.attempts = ops.attempts.load(relaxed);
    s.releases = ops.releases.load(relaxed);
    s.extends = ops.extends.load(relaxed);
    s.renewals = ops.renewals.load(relaxed);
    s.locks_lost = ops.locks_lost.load(relaxed);
    s.release_late_deleted = ops.release_late_deleted.load(relaxed);
    s.handoffs = ops.handoffs.load(relaxed);
    s.release_late_failed = ops.release_late_failed.load(relaxed);
    s.requests = connections.requests.load(relaxed);
    s.timeouts = connections.timeouts.load(relaxed);
    s.writes = connections.writes.load(relaxed);
    s.node_restarts = connections.restarts.load(relaxed);
    s.node_clock_steps = connections.clock_steps.load(relaxed);
    s.waiters = waiters.waiter_count();
    s.subscriber_connections = waiters.connection_count();
    s.subscribers_ready = waiters.ready_count();
    s.operations = operations;
    s.connects = connections.connects.load(relaxed);
    s.nodes_connected = connections.connected.load(relaxed);
    // A cluster's or Sentinel master's connections count in the member's own counters
    // (their number is not the members'); their traffic is the client's all the same.
    for (const auto& m : members) {
        const routed_member* r = m->routed();
        if (r == nullptr) continue;
        const connection_counters& own = r->traffic();
        s.requests += own.requests.load(relaxed);
        s.timeouts += own.timeouts.load(relaxed);
        s.writes += own.writes.load(relaxed);
        s.node_restarts += own.restarts.load(relaxed);
        s.node_clock_steps += own.clock_steps.load(relaxed);
        s.connects += own.connects.load(relaxed);
    }
    return s;
}

auto read_metrics(const op_counters& ops, const std::vector<std::unique_ptr<quorum_member>>& nodes,
                  const waiter_registry& waiters) -> metrics_snapshot {
    constexpr auto relaxed = std::memory_order_relaxed;
    metrics_snapshot m;
    const latency_histograms& latency = ops.latency;
    for (std::size_t i = 0; i < m.acquire.size(); ++i) m.acquire[i] = latency.acquire[i].snapshot();
    m.release = latency.release.snapshot();
    m.extend = latency.extend.snapshot();
    m.wait = latency.wait.snapshot();
    m.nodes.reserve(nodes.size());
    for (const auto& n : nodes) {
        // A cluster or Sentinel member counts as one node: its connections
        // change on the loop thread, and metrics() is read from any.
        const node_counters& c =
            n->standalone() != nullptr ? n->standalone()->metrics() : n->routed()->metrics();
        m.nodes.push_back(
            node_metrics{.node = n->name(),
                         .up = c.up.load(relaxed),
                         .rtt_seconds = c.rtt_seconds(),
                         .timeouts = c.timeouts.load(relaxed),
                         .unreachable = c.unreachable.load(relaxed),
                         .error_replies = c.error_replies.load(relaxed),
                         .connects = c.connects.load(relaxed),
                         // A routed member's connections count in its own counters.
                         .clock_steps = n->standalone() != nullptr
                                            ? c.clock_steps.load(relaxed)
                                            : n->routed()->traffic().clock_steps.load(relaxed),
                         .grants_missed = n->grants_missed()});
    }
    m.locks_held = ops.locks_held->load(relaxed);
    m.renewals = ops.renewals.load(relaxed);
    m.locks_lost = ops.locks_lost.load(relaxed);
    m.handoffs = ops.handoffs.load(relaxed);
    m.attempts = ops.attempts.load(relaxed);
    m.waiters = waiters.waiter_count();
    return m;
}

}  // namespace redlock::detail
