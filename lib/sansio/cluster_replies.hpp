#pragma once

// What a Redis Cluster says about itself, read from replies: the slot map
// (CLUSTER SLOTS) and the redirections (MOVED, ASK). No I/O: the cluster
// member's shell (transport/cluster_member) sends and feeds these.

#include "sansio/reply.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// One node of a cluster as the cluster names it: its announced address and its id.
struct cluster_node {
    std::string host;
    std::uint16_t port = 0;
    std::string id;  ///< the node's 40-character id (empty from servers before 4.0)

    /// "host:port"
    [[nodiscard]] auto address() const -> std::string;
    friend auto operator==(const cluster_node&, const cluster_node&) -> bool = default;
};

/// Slots first..last (inclusive) and who serves them.
struct slot_range {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    cluster_node master;
    std::vector<cluster_node> replicas;
};

/// A CLUSTER SLOTS answer, read: its ranges, or why it could not be read.
struct slot_layout {
    std::vector<slot_range> ranges;
    std::string error;  ///< non-empty: the reply was not a slot map
    /// The slots no range covers, as "first-last" items ("0-99, 200"); empty when all are served.
    [[nodiscard]] auto unserved() const -> std::string;
};

/// A TCP port written in decimal (1..65535), as redirections and Sentinel name them.
[[nodiscard]] auto read_port(std::string_view text) -> std::optional<std::uint16_t>;

/// Appends "first-last" (or "first" alone) to `out`, after ", " unless it is empty: how slot
/// ranges are listed in messages.
void append_slot_range(std::string& out, unsigned first, unsigned last);

/// Reads CLUSTER SLOTS's reply. A node announced with an empty host (or "?")
/// is named by `asked_host`, the host the question went to, as Redis intends.
[[nodiscard]] auto read_cluster_slots(const reply* r, std::string_view asked_host) -> slot_layout;

/// A -MOVED or -ASK error: the slot and where it now is.
struct redirection {
    enum class kind : std::uint8_t { moved, ask };
    kind how = kind::moved;
    std::uint16_t slot = 0;
    std::string host;  ///< empty: the host the command went to
    std::uint16_t port = 0;
};

/// The redirection an error reply carries, if it is one ("MOVED 3999 127.0.0.1:6381",
/// "ASK 3999 [::1]:6381", "MOVED 3999 :6381").
[[nodiscard]] auto read_redirection(const reply* r) -> std::optional<redirection>;

/// An error after which the slot map is worth reading again: the cluster is
/// down or reconfiguring (CLUSTERDOWN, TRYAGAIN), or the node is no longer a
/// master (READONLY).
[[nodiscard]] auto calls_for_refresh(const reply* r) noexcept -> bool;

}  // namespace redlock::detail
