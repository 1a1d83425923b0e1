#pragma once

// What the nodes of a cluster_member say about their cluster, and whether they agree:
// CLUSTER NODES parsed, and the "settled" condition cluster_member awaits.

#include "support/redis_server.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock_test {

/// One line of CLUSTER NODES.
struct cluster_view_entry {
    std::string id;
    std::uint16_t port = 0;  ///< client port (TLS port on a TLS cluster); 0 when unknown
    bool myself = false;
    bool master = false;
    bool failed = false;     ///< flagged "fail" (not just the local suspicion "fail?")
    bool unsettled = false;  ///< "handshake" or "noaddr": not yet a known member
    std::string master_id;   ///< empty for a master
    std::vector<std::pair<int, int>> ranges;  ///< served slots, inclusive; no migration marks
};

/// CLUSTER NODES text, one entry per line.
[[nodiscard]] auto parse_cluster_nodes(std::string_view text) -> std::vector<cluster_view_entry>;
/// The entry serving `slot`, if any.
[[nodiscard]] auto owner_of(const std::vector<cluster_view_entry>& view, int slot)
    -> const cluster_view_entry*;

/// What one running node reports: CLUSTER INFO's cluster_state, CLUSTER NODES, and for a
/// replica its replication link.
struct node_report {
    std::uint16_t port = 0;
    std::string state;  ///< "ok", "fail", or "unreachable: <why>"
    std::vector<cluster_view_entry> view;
    bool replica = false;
    bool link_up = false;
};

/// Asks every running, unfrozen node of `nodes`.
[[nodiscard]] auto take_reports(const std::vector<redis_server>& nodes) -> std::vector<node_report>;

/// Empty when the reports (those of every running node) are settled, as cluster_member
/// defines it; else the first reason they are not.
[[nodiscard]] auto unsettled_reason(const std::vector<node_report>& reports) -> std::string;

/// The reports, one line per node, for an error message.
[[nodiscard]] auto describe(const std::vector<node_report>& reports) -> std::string;

}  // namespace redlock_test
