#pragma once

// The quorum's members, made from a configuration: a connection per standalone
// node, a cluster_router per cluster, a sentinel_router per Sentinel-managed
// master, in that order (client_config::member_count()).

#include "transport/quorum_member.hpp"

#include <uv.h>

#include <memory>
#include <vector>

namespace redlock::detail {

/// Not started: the caller starts each one.
[[nodiscard]] auto make_members(const member_parts& p)
    -> std::vector<std::unique_ptr<quorum_member>>;

}  // namespace redlock::detail
