#pragma once

// client::leader_async's body (client.cpp keeps the member; README "Leader
// election"): one round trip to every node, tallied by election_tally.

#include "redlock/election.hpp"
#include "redlock/result.hpp"

#include <functional>
#include <string>

namespace redlock::detail {

class client_core;

/// The leader of `name` as a majority say; quorum_unreachable when fewer than
/// a majority answered, invalid_argument for a name that is no lock's. `done`
/// runs once, on the loop thread, never inside this call.
void read_leader(client_core& core, std::string name,
                 std::function<void(result<election_view>)> done);

}  // namespace redlock::detail
