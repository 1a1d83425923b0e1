#pragma once

// One quorum member listed twice, or one server in two roles, as far as the
// configuration itself shows it (issue 38, item 9). validate_config runs it
// after every address is known to be well-formed; like node_alias it resolves
// no name and connects to nothing. What only the servers can tell (two seeds,
// of two cluster members, that are nodes of one cluster; a host name that
// resolves to another node's address) is left to run time.

#include "redlock/config.hpp"

#include <optional>
#include <string>
#include <utility>

namespace redlock::detail {

/// The first overlap found, as (JSON pointer of the later entry, message), in
/// the client's order of members: nodes, clusters, sentinel_masters. Checked:
/// - a seed, or a Sentinel, listed twice in one member ("duplicate of ...");
/// - one Redis Cluster as two members (a seed of one is a seed of another);
/// - a cluster seed that is also a standalone node;
/// - a Sentinel that is also a data node or a cluster seed;
/// - one Sentinel-managed master as two members: the same master_name asked of
///   a Sentinel both list. The same Sentinel with other master names is fine
///   (one Sentinel group monitors several masters), and so is one name behind
///   Sentinels that share no address (two groups may both call theirs "mymaster").
/// Two standalone nodes are validate_config's own rule, not this one's.
[[nodiscard]] auto member_overlap_problem(const client_config& config)
    -> std::optional<std::pair<std::string, std::string>>;

}  // namespace redlock::detail
