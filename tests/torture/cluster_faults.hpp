#pragma once

// The fault schedule of the cluster-member torture test (cluster_members_test.cpp): on Redis
// Clusters that are the quorum's members, what happens to real deployments' masters.
//
//   forced failover   a master serving a torture resource's slot is SIGKILLed and its replica
//                     promoted (cluster_member::forced_failover: with 2 shards, CLUSTER FAILOVER
//                     TAKEOVER at once). What the replica had not received yet is lost, like a
//                     master restarted without persistence: the clients' quarantine is what
//                     must keep a lost grant from being granted again. On loopback a replica
//                     is microseconds behind and loses next to nothing, so by default the
//                     promoted replica is made to lose every hold of the torture resources in
//                     the slots it took over (lock keys, readers' sets, permits: DEL at once,
//                     before the clients have read the new map), as a replica that lagged a
//                     TTL behind would. Fence counters and wait queues are kept.
//   restart           the crashed node, some seconds later (quarantine + margin + 0-3 s after
//                     its failover): it rejoins as its successor's replica, empty, and resyncs.
//   manual failover   CLUSTER FAILOVER on the replica of a master serving a torture resource's
//                     slot: a coordinated switch without loss (the clients quarantine it all
//                     the same, since they cannot tell it from a forced one).
//   move slot         a torture resource's slot resharded to the member's other master
//                     (IMPORTING/MIGRATING, MIGRATE of its keys with their TTLs, SETSLOT NODE):
//                     ASK and TRYAGAIN while it moves, MOVED after, and no quarantine.
//
// At most one member is impaired at a time, a minority of three: from a failover until its
// quarantine (plus a margin) is over and its crashed node (if any) is back. A fault on another
// member is skipped meanwhile (counted as "skipped"). Each operation blocks the caller until the
// member has settled (seconds), and the next fault comes 1-3 s after it.
//
// The schedule is a function of the seed: a fixed number of draws per fault. What each fault
// hits (which master serves which slot then, what a skip leaves out) also depends on timing,
// so a replay injects the same draws at about the same offsets, not the same run.
//
// timeline() gives the faults as token_erasure.hpp's timeline, the members as its nodes
// (member_timeline.hpp): a failover spans from its start until its quarantine and margin are
// over, a slot move until it settled, a crashed node until it is back (its shard has no replica
// meanwhile, and WAIT fails there); a forced failover also "empties" its member at the SIGKILL.

#include "member_timeline.hpp"
#include "support/cluster_member.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace redlock_torture {

struct cluster_fault_settings {
    /// The clients' restart_quarantine_ms (0 with wait_replicas): how long after a failover
    /// the member's moved slots do not count. The member counts as impaired that long after the
    /// failover has settled, plus `margin`: a client reads the new map after its next request
    /// to the member fails, and that was seen to take a second.
    std::chrono::milliseconds quarantine{1000};
    std::chrono::milliseconds margin{2000};
    /// The first fault comes after `first_fault`; each next one `min_gap` to `max_gap` after the
    /// previous one has settled.
    std::chrono::milliseconds first_fault{2000};
    std::chrono::milliseconds min_gap{1000};
    std::chrono::milliseconds max_gap{3000};
    /// The promoted replica loses the torture resources' holds (see above); false: it keeps
    /// what replication gave it.
    bool lose_holds = true;
    /// Percent chances; what is left to 100 goes to slot moves.
    int forced_failover = 35;
    int manual_failover = 30;
};

class cluster_faults {
public:
    /// `lock_keys`: one key of each torture resource ("redlock:{torture:a}"), whose slots the
    /// faults aim at. `log` receives one line per fault, stamped with monotonic_ns(); may be null.
    cluster_faults(std::vector<redlock_test::cluster_member>& members,
                   std::vector<std::string> lock_keys, cluster_fault_settings settings,
                   std::uint64_t seed, std::FILE* log);

    /// Restarts a crashed node that is due; else, when it is time, injects the next fault.
    /// Blocks while an operation settles. Throws what cluster_member throws (a member that did
    /// not settle in time).
    void step();
    /// Restarts every crashed node, at once.
    void heal_all();

    /// Per kind: forced_failover, restart, manual_failover, move_slot; "skipped": faults
    /// ruled out (another member impaired, or no replica to promote); "holds_dropped": the keys
    /// the promoted replicas were made to lose.
    [[nodiscard]] auto counts() const -> const std::map<std::string, std::uint64_t>& {
        return counts_;
    }
    /// The most members impaired at once (1 by construction; checked by the test).
    [[nodiscard]] auto max_impaired() const noexcept -> std::size_t { return max_impaired_; }
    /// A one-line description of where each resource's slot is served now, per member.
    [[nodiscard]] auto layout() const -> std::string;
    /// Every fault so far, per member (see above), times in monotonic_ns().
    [[nodiscard]] auto timeline() const -> const fault_timeline& { return timeline_.timeline(); }

private:
    using clock = std::chrono::steady_clock;

    struct member_state {
        std::optional<std::size_t> crashed;  ///< the node down since a forced failover
        std::int64_t crashed_ns = 0;         ///< since when (monotonic_ns())
        clock::time_point restart_at{};
        clock::time_point impaired_until{};
    };

    [[nodiscard]] auto impaired(std::size_t m, clock::time_point now) const -> bool;
    [[nodiscard]] auto other_impaired(std::size_t m, clock::time_point now) const -> bool;
    void inject(clock::time_point now);
    void restart(std::size_t m);
    /// DELs on `node` every key of the torture resources whose slot `had_slot` says it took.
    auto drop_holds(const redlock_test::redis_server& node, const std::vector<bool>& had_slot)
        -> std::size_t;
    auto uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t;
    /// Adds `kind` on member `m` to the timeline, from `from_ns` until `until` (now or later).
    void span(const char* kind, std::size_t m, std::int64_t from_ns, clock::time_point until);
    void note(const char* what, std::size_t m, const std::string& detail);
    void skip(const char* what, std::size_t m, const std::string& why);

    std::vector<redlock_test::cluster_member>& members_;
    std::vector<std::string> keys_;
    std::vector<std::uint16_t> slots_;
    cluster_fault_settings settings_;
    std::mt19937_64 rng_;
    std::FILE* log_;
    std::vector<member_state> state_;
    clock::time_point next_fault_;
    std::map<std::string, std::uint64_t> counts_;
    std::size_t max_impaired_ = 0;
    member_timeline timeline_;
};

}  // namespace redlock_torture
