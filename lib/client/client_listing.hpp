#pragma once

// client::list_async's body (client.cpp keeps the member, README "Listing locks"):
// checks the options, runs a list_op on the client's loop, and tallies what the nodes hold.

#include "redlock/client.hpp"
#include "redlock/diagnostics.hpp"

#include <functional>
#include <string>

namespace redlock::detail {

class client_core;

/// Why `options` cannot list on a client of `config`, or empty: cluster members
/// (SCAN would have to visit every master of each cluster, which list does not do),
/// a limit of 0, a batch outside 1..10000, a negative budget.
[[nodiscard]] auto listing_problem(const client_config& config, const list_options& options)
    -> std::string;

/// Lists on `core`'s nodes; `done` runs once, on the loop thread, never inside this call.
void start_listing(client_core& core, list_options options,
                   std::function<void(result<lock_listing>)> done);

}  // namespace redlock::detail
