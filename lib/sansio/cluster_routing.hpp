#pragma once

// Where a cluster member's commands go, and which of its slots may not count
// toward a quorum yet. Pure: the shell (transport/cluster_member) feeds it slot
// maps and redirections with the time, and connects to the nodes it names.
//
// The failover rule. A slot whose master changed to a node that was not a
// master before (a replica promoted by a failover, or a node that came back
// with a new id) may lack lock keys the old master granted and had not yet
// replicated: exactly a master restarted without persistence. Its grants do
// not count for `quarantine` from the moment the change is seen. A slot moved
// to a node that was already a master (resharding) keeps its keys (MIGRATE
// moves them with their TTLs) and counts at once.

#include "sansio/cluster_replies.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

class cluster_routing {
public:
    using time_point = std::chrono::steady_clock::time_point;

    /// `quarantine` 0: the failover rule is off (wait_replicas guards instead).
    explicit cluster_routing(std::chrono::milliseconds quarantine) : quarantine_{quarantine} {
        owner_.fill(no_node);
    }

    /// What an update asks of the shell.
    struct change {
        std::vector<std::size_t> new_nodes;  ///< indices of nodes to connect to
        std::vector<std::string> notes;      ///< one line per failover seen (to log)
    };

    /// A slot map read from CLUSTER SLOTS (without error), seen at `now`.
    auto apply(const slot_layout& layout, time_point now) -> change;
    /// A MOVED for `slot` to `host:port` (host already resolved to the asked
    /// host when empty), seen at `now`.
    auto moved(std::uint16_t slot, const std::string& host, std::uint16_t port, time_point now)
        -> change;

    /// The node serving `slot`, if a map said so.
    [[nodiscard]] auto node_of(std::uint16_t slot) const noexcept -> std::optional<std::size_t> {
        const auto n = owner_[slot];
        return n == no_node ? std::nullopt : std::optional<std::size_t>{n};
    }
    /// Until when `slot`'s grants do not count (the epoch when they do).
    [[nodiscard]] auto quarantined_until(std::uint16_t slot) const noexcept -> time_point {
        return quarantined_until_[slot];
    }
    /// Index of the node at `host:port`, adding it (and reporting it in `c`) when new.
    auto index_of(const std::string& host, std::uint16_t port, change& c) -> std::size_t;
    [[nodiscard]] auto node(std::size_t i) const -> const cluster_node& { return nodes_.at(i); }
    [[nodiscard]] auto node_count() const noexcept -> std::size_t { return nodes_.size(); }
    [[nodiscard]] auto is_master(std::size_t i) const noexcept -> bool {
        return i < masters_.size() && masters_[i];
    }
    /// The replicas the last map named for master `i` ("host:port" each), for `redlock check`.
    [[nodiscard]] auto replicas_of(std::size_t i) const -> std::vector<std::string> {
        return i < replicas_.size() ? replicas_[i] : std::vector<std::string>{};
    }
    /// Whether a slot map has been applied.
    [[nodiscard]] auto mapped() const noexcept -> bool { return mapped_; }
    /// The slots in quarantine at `now`, as "first-last" items; empty when none.
    [[nodiscard]] auto quarantined_slots(time_point now) const -> std::string;

private:
    static constexpr std::uint16_t no_node = UINT16_MAX;
    void quarantine(std::uint16_t slot, time_point now);

    std::chrono::milliseconds quarantine_;
    std::vector<cluster_node> nodes_;                 // every node ever named; indices are stable
    std::vector<bool> masters_;                       // per node: serves a slot in the current map
    std::vector<std::vector<std::string>> replicas_;  // per node: its replicas in that map
    std::array<std::uint16_t, 16384> owner_{};
    std::array<time_point, 16384> quarantined_until_{};
    bool mapped_ = false;
};

}  // namespace redlock::detail
