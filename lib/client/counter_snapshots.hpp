#pragma once

// client::stats() and client::metrics(): the counters' atomics read into the
// public snapshots, from any thread. Nothing here is the loop thread's alone:
// the node list is fixed once the client is built.

#include "operations/op_context.hpp"
#include "redlock/client.hpp"
#include "redlock/metrics.hpp"
#include "transport/quorum_member.hpp"

#include <cstddef>
#include <memory>
#include <vector>

namespace redlock::detail {

class waiter_registry;

/// `operations`: in flight, and held back by max_concurrent_acquisitions.
[[nodiscard]] auto read_stats(const op_counters& ops, const connection_counters& connections,
                              const std::vector<std::unique_ptr<quorum_member>>& members,
                              const waiter_registry& waiters, std::size_t operations)
    -> client_stats;

[[nodiscard]] auto read_metrics(const op_counters& ops,
                                const std::vector<std::unique_ptr<quorum_member>>& nodes,
                                const waiter_registry& waiters) -> metrics_snapshot;

}  // namespace redlock::detail
