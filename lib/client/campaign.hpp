#pragma once

// client::campaign's body (client.cpp keeps the members; README "Leader
// election"): an auto-renewed, fenced, fair-waiting acquisition of the
// election's lock, then the proposal proclaimed on a majority under the new
// term. Also the write both the campaign and leadership::proclaim make.

#include "client/client_core.hpp"
#include "redlock/client.hpp"
#include "redlock/election.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace redlock::detail {

struct leadership_state;

/// Waits (in arrival order, fair mode) until this client holds `name`'s lock,
/// proclaims `proposal` there and delivers the leadership; `done` runs once, on
/// the loop thread, never inside this call. The ticket cancels the wait.
auto start_campaign(const std::shared_ptr<client_core>& core, std::string name,
                    std::string proposal, campaign_options options,
                    std::function<void(result<leadership>)> done) -> client::acquire_ticket;

/// Stores `value` as proclamation `seq` of `state`'s term on every node that
/// still holds its lock; `done` hears whether a majority did.
void proclaim_on_nodes(const std::shared_ptr<leadership_state>& state, std::string value,
                       std::uint64_t seq, std::function<void(result<void>)> done);

}  // namespace redlock::detail
