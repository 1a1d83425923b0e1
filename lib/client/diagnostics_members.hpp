#pragma once

// client::check on every kind of member (issue 38, items 4 to 6): what check_op asks each
// member's servers, and what is made of their answers (no I/O here). A cluster member is
// judged by every master of its slot map, its cluster_state and the slots nobody serves; a
// Sentinel member by its master and by what every sentinel says of it. A member that can
// never serve as configured (configuration_errors), one that cannot take every lock now
// (problems), the guarantee it weakens (warnings) and the failovers its servers report.
// diagnostics_members.cpp: the plan and the clusters; diagnostics_sentinel.cpp: Sentinel
// and standalone members; diagnostics_readers.cpp: reading the replies.

#include "operations/check_op.hpp"
#include "redlock/config.hpp"
#include "redlock/diagnostics.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// What the configuration says of one member that check judges it by.
struct member_setup {
    member_kind kind = member_kind::standalone;
    int wait_replicas = 0;
    std::string master_name;  ///< a Sentinel member's
};

/// The positions of the replies in check_plan's command lists.
enum check_reply : std::size_t {
    info_server = 0,
    info_persistence,
    info_replication,
    config_appendfsync,
    cluster_info,   ///< cluster members only
    cluster_nodes,  ///< cluster members only
};
enum sentinel_reply : std::size_t { sentinel_master = 0, sentinel_replicas };

/// The members of `config` in the client's order, and what check_op asks them.
[[nodiscard]] auto check_setups(const client_config& config) -> std::vector<member_setup>;
[[nodiscard]] auto check_plan_for(const std::vector<member_setup>& setups) -> check_plan;

/// Every member's health from what its servers answered (one check per setup).
[[nodiscard]] auto parse_members(std::size_t quorum, const std::vector<member_setup>& setups,
                                 std::vector<member_check> checks) -> cluster_health;

/// One kind of member each (diagnostics_members.cpp, diagnostics_sentinel.cpp).
[[nodiscard]] auto standalone_member(member_check& check) -> node_health;
[[nodiscard]] auto cluster_member_health(const member_setup& setup, member_check& check)
    -> node_health;
[[nodiscard]] auto sentinel_member_health(const member_setup& setup, member_check& check)
    -> node_health;

// ---- reading the replies (diagnostics_readers.cpp) -------------------------------------------

/// One line of CLUSTER NODES.
struct cluster_nodes_entry {
    std::string id;
    std::string address;  ///< "ip:port", without the bus port and the hostname
    bool myself = false;
    bool master = false;
    bool failed = false;                 ///< flagged "fail": the cluster agrees it is down
    bool suspected = false;              ///< flagged "fail?": this node cannot reach it
    std::string master_id;               ///< a replica's master ("-" for a master)
    std::uint64_t pong_received_ms = 0;  ///< unix ms of its last PONG, on the answering node
    std::size_t slot_count = 0;          ///< slots it serves (importing/migrating marks aside)
};
[[nodiscard]] auto read_cluster_nodes(std::string_view text) -> std::vector<cluster_nodes_entry>;

/// A reply of alternating names and values (SENTINEL MASTER), as a map; empty otherwise.
[[nodiscard]] auto read_fields(const flat_reply& r) -> std::map<std::string, std::string>;

/// The replicas a master's INFO replication lists ("slave0:ip=…,port=…,state=online,…,lag=0").
[[nodiscard]] auto listed_replicas(std::string_view info_replication)
    -> std::vector<replica_health>;

/// A master's health from its answers to the first four commands of check_plan (and a
/// cluster node's CLUSTER INFO), `address` being how the client reaches it.
[[nodiscard]] auto master_from(const node_probe& p, std::string address) -> master_health;

/// A master's persistence, health and TLS copied into a member's own fields.
void describe_member_by(node_health& h, const master_health& m);

/// "12 s", "3 min 5 s", "2 h 4 min", "3 d 1 h".
[[nodiscard]] auto age_text(std::uint64_t ms) -> std::string;

/// `field:value` of an INFO reply's text; empty when absent or not text.
[[nodiscard]] auto info_of(const flat_reply& r, std::string_view field) -> std::string;

/// ", replicas a (online), b (down)" or ", no replica".
[[nodiscard]] auto replicas_text(const std::vector<replica_health>& replicas) -> std::string;

/// "up" or "DOWN (cause)", and what else the master line says of a master.
[[nodiscard]] auto master_state_text(const master_health& m) -> std::string;

/// The warning of a member whose masters have replicas and no wait_replicas (README,
/// "Staying correct across a failover").
[[nodiscard]] auto no_wait_replicas_warning(std::size_t replicas) -> std::string;

/// wait_replicas `wanted` against a master that has `known` replicas of which `connected`
/// stream from it: a configuration error (known < wanted), a problem (connected < wanted),
/// or nothing. `who` names the master.
void judge_wait_replicas(node_health& h, const std::string& who, int wanted, std::size_t known,
                         std::size_t connected);

}  // namespace redlock::detail
