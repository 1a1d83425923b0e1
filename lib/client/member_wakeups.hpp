#pragma once

// How release notifications reach this client's waiters through its cluster and
// Sentinel members: each member subscribes on its masters (a Sentinel member to
// this client's channel; a cluster member to the shard channel of each resource
// waited on, SSUBSCRIBE in the lock's slot), and hands every message to the
// waiter registry, which also asks whether those subscriptions are confirmed.

#include "operations/waiter_registry.hpp"
#include "transport/quorum_member.hpp"

#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

/// Before the members start. `channel`: this client's classic wake channel.
void wire_wakeups(std::vector<std::unique_ptr<quorum_member>>& members, waiter_registry& waiters,
                  const std::string& channel);

}  // namespace redlock::detail
