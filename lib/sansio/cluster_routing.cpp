#include "sansio/cluster_routing.hpp"

#include <algorithm>

namespace redlock::detail {
namespace {

auto describe(const cluster_node& n) -> std::string {
    return n.address() + (n.id.empty() ? "" : " (" + n.id.substr(0, 8) + ")");
}

}  // namespace

auto cluster_routing::index_of(const std::string& host, std::uint16_t port, change& c)
    -> std::size_t {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i].host == host && nodes_[i].port == port) return i;
    }
    nodes_.push_back(cluster_node{host, port, {}});
    masters_.push_back(false);
    c.new_nodes.push_back(nodes_.size() - 1);
    return nodes_.size() - 1;
}

void cluster_routing::quarantine(std::uint16_t slot, time_point now) {
    if (quarantine_.count() <= 0) return;
    const time_point until = now + quarantine_;
    if (quarantined_until_[slot] < until) quarantined_until_[slot] = until;
}

auto cluster_routing::apply(const slot_layout& layout, time_point now) -> change {
    change c;
    const std::vector<bool> was_master = masters_;
    const bool had_map = mapped_;
    std::array<std::uint16_t, 16384> owner{};
    owner.fill(no_node);
    std::vector<bool> renamed(nodes_.size(), false);
    for (const slot_range& range : layout.ranges) {
        const std::size_t n = index_of(range.master.host, range.master.port, c);
        if (renamed.size() < nodes_.size()) renamed.resize(nodes_.size(), false);
        cluster_node& known = nodes_[n];
        // The same address under a new id is a new node: it came back empty
        // (its nodes.conf lost) and was given the slots again.
        if (!known.id.empty() && !range.master.id.empty() && known.id != range.master.id)
            renamed[n] = true;
        if (!range.master.id.empty()) known.id = range.master.id;
        for (unsigned s = range.first; s <= range.last; ++s)
            owner[s] = static_cast<std::uint16_t>(n);
    }
    masters_.assign(nodes_.size(), false);
    for (const auto n : owner)
        if (n != no_node) masters_[n] = true;
    replicas_.assign(nodes_.size(), {});
    for (const slot_range& range : layout.ranges) {
        auto& list = replicas_[index_of(range.master.host, range.master.port, c)];
        for (const cluster_node& r : range.replicas) {
            std::string address = r.address();
            if (std::find(list.begin(), list.end(), address) == list.end())
                list.push_back(std::move(address));
        }
    }
    if (had_map) {
        // Report each failover once per new master, with the slots it took.
        std::vector<std::pair<unsigned, unsigned>> taken_first_last(nodes_.size(), {16384, 0});
        for (unsigned s = 0; s < 16384; ++s) {
            const auto n = owner[s];
            if (n == no_node) continue;
            const bool promoted = owner_[s] != n && !(n < was_master.size() && was_master[n]);
            if (!promoted && !renamed[n]) continue;
            quarantine(static_cast<std::uint16_t>(s), now);
            auto& [first, last] = taken_first_last[n];
            if (s < first) first = s;
            last = s;
        }
        for (std::size_t n = 0; n < nodes_.size(); ++n) {
            const auto [first, last] = taken_first_last[n];
            if (first > last) continue;
            c.notes.push_back("slots " + std::to_string(first) + "-" + std::to_string(last) +
                              " changed master to " + describe(nodes_[n]) +
                              (renamed[n] ? ", a new node id at a known address"
                                          : ", not a master before (a failover)") +
                              (quarantine_.count() > 0
                                   ? ": its grants there are not counted for " +
                                         std::to_string(quarantine_.count()) + " ms"
                                   : ""));
        }
    }
    owner_ = owner;
    mapped_ = true;
    return c;
}

auto cluster_routing::moved(std::uint16_t slot, const std::string& host, std::uint16_t port,
                            time_point now) -> change {
    change c;
    const std::size_t n = index_of(host, port, c);
    owner_[slot] = static_cast<std::uint16_t>(n);
    // A promotion seen through a MOVED: the node is not recorded as a master, so that
    // each further slot it turns out to serve (by MOVED or by the next map) is a failover
    // too, not a resharding to a master.
    if (mapped_ && !is_master(n)) {
        quarantine(slot, now);
        c.notes.push_back("slot " + std::to_string(slot) + " moved to " + describe(nodes_[n]) +
                          ", not a master before (a failover)" +
                          (quarantine_.count() > 0 ? ": its grants there are not counted for " +
                                                         std::to_string(quarantine_.count()) + " ms"
                                                   : ""));
        return c;
    }
    masters_[n] = true;
    return c;
}

auto cluster_routing::quarantined_slots(time_point now) const -> std::string {
    std::string out;
    for (unsigned s = 0; s < 16384;) {
        if (quarantined_until_[s] <= now) {
            ++s;
            continue;
        }
        unsigned e = s;
        while (e + 1 < 16384 && quarantined_until_[e + 1] > now) ++e;
        append_slot_range(out, s, e);
        s = e + 1;
    }
    return out;
}

}  // namespace redlock::detail
