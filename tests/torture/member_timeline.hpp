#pragma once

// The cluster-member torture test's faults (cluster_faults.hpp) as token_erasure.hpp's
// timeline, with the quorum's members as its nodes: a repeated election term is then judged by
// the same rule as in the standalone run (explain_repeat(), take_explained_repeats()), and
// cluster_members_test.cpp says why that rule fits members. What maps to what:
//   - every fault of a member is a span of that member, from its start until the member is no
//     longer impaired: a leader's confirm round sent meanwhile may have missed it;
//   - a forced failover is also an "in-memory kill" of its member at the SIGKILL: the promoted
//     replica may lack the counter raises the old master had not sent it yet, as a node
//     restarted empty lacks them. A manual failover (the replica caught up first) and a slot
//     move (MIGRATE moves the counter whole) empty nothing.

#include "token_erasure.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace redlock_torture {

class member_timeline {
public:
    /// `kind` ("forced-failover", "manual-failover", "move-slot", "node-down") on `member`
    /// over [from_ns, to_ns].
    void fault(std::string kind, std::size_t member, std::int64_t from_ns, std::int64_t to_ns) {
        timeline_.faults.push_back({std::move(kind), from_ns, to_ns, {member}, std::nullopt});
    }
    /// The SIGKILL of `member`'s master in a forced failover, at `at_ns`.
    void forced_kill(std::size_t member, std::int64_t at_ns) {
        timeline_.in_memory_kills.emplace_back(at_ns, member);
    }
    [[nodiscard]] auto timeline() const noexcept -> const fault_timeline& { return timeline_; }

private:
    fault_timeline timeline_;
};

}  // namespace redlock_torture
