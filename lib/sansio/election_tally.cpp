#include "sansio/election_tally.hpp"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

namespace redlock::detail {
namespace {

/// The holder text in a lock value (as redlock::holder_of, which lives in the client layer).
auto holder_text(const std::string& value) -> std::string {
    constexpr std::size_t token = 32;
    if (value.size() <= token + 1 || value[token] != '|') return {};
    return value.substr(token + 1);
}

/// The node's vote, if it votes: its lock key and leader key name the same lock.
auto votes(const node_election& n) -> bool {
    return n.answered && n.lock_value && *n.lock_value != "~readers" && n.leader_lock &&
           *n.leader_lock == *n.lock_value && n.leader_term && n.leader_seq && n.leader_value;
}

}  // namespace

auto tally_election(std::string name, std::span<const node_election> nodes, std::size_t quorum)
    -> election_view {
    election_view view;
    view.name = std::move(name);
    view.quorum = quorum;
    for (const auto& n : nodes) {
        if (!n.answered) continue;
        ++view.answered;
        if (n.counter) view.highest_term = std::max(view.highest_term, *n.counter);
    }
    if (quorum == 0) return view;
    for (const auto& candidate : nodes) {
        if (!votes(candidate)) continue;
        std::vector<const node_election*> group;
        for (const auto& n : nodes) {
            if (votes(n) && *n.lock_value == *candidate.lock_value &&
                *n.leader_term == *candidate.leader_term)
                group.push_back(&n);
        }
        if (group.size() < quorum) continue;
        // At most one group has a majority: its nodes are a majority, so no other can.
        std::vector<std::uint64_t> seqs;
        std::vector<std::chrono::milliseconds> ttls;
        for (const auto* n : group) {
            seqs.push_back(*n->leader_seq);
            ttls.push_back(n->ttl.value_or(std::chrono::milliseconds{0}));
        }
        std::ranges::sort(seqs, std::greater<>{});
        std::ranges::sort(ttls, std::greater<>{});
        const std::uint64_t seq = seqs[quorum - 1];
        leader_info leader;
        leader.term = *candidate.leader_term;
        leader.holder = holder_text(*candidate.lock_value);
        leader.validity = ttls[quorum - 1];
        leader.proclaimed = seq;
        for (const auto* n : group) {
            if (*n->leader_seq == seq) {
                leader.value = *n->leader_value;
                break;
            }
        }
        view.agreeing = group.size();
        view.leader = std::move(leader);
        return view;
    }
    return view;
}

}  // namespace redlock::detail
