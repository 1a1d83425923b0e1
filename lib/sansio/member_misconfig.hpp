#pragma once

// A member that can never grant a lock as configured (issue 38, item 5): a cluster seed that
// is not in cluster mode, a Redis Cluster node listed as a standalone master, a master name
// that no sentinel knows. Such a member fails every request with the same cause, and an
// acquisition that misses its quorum because of it is a configuration error to fix, not an
// outage to wait out: invalid_config (the CLI's exit 78), not quorum_unreachable (69).
//
// The causes are read from the texts the connection's handshake (node_handshake) and the
// Sentinel router give, which the tests tie to this reading (member_misconfig_test drives
// node_handshake for its texts; the integration tests run real servers).

#include "redlock/error.hpp"

#include <string_view>

namespace redlock::detail {

/// Whether a member's failure (a node_report's detail, a probe's cause) says that it can
/// never serve as configured, rather than that it is down now.
[[nodiscard]] auto configuration_cause(std::string_view detail) noexcept -> bool;

/// An acquisition's failure: unchanged unless it is quorum_unreachable and a member failed
/// for a configuration_cause; then invalid_config, its message led by "configuration: "
/// and the members to fix, the nodes' reports kept.
[[nodiscard]] auto configuration_failure(error e) -> error;

}  // namespace redlock::detail
