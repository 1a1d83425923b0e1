#include "transport/member_factory.hpp"

#include "transport/cluster_router.hpp"
#include "transport/sentinel_router.hpp"

namespace redlock::detail {

auto make_members(const member_parts& p) -> std::vector<std::unique_ptr<quorum_member>> {
    std::vector<std::unique_ptr<quorum_member>> members;
    members.reserve(p.config.member_count());
    for (const auto& address : p.config.nodes) {
        members.push_back(std::make_unique<quorum_member>(std::make_unique<node_connection>(
            p.loop, p.batcher, address, p.config, p.rng, p.counters, p.tls)));
    }
    for (const cluster_member& m : p.config.clusters) {
        // Named by its first seed: what the user wrote, whoever serves the slots now.
        std::string name =
            "cluster " + (m.seeds.empty() ? std::string{"?"} : m.seeds.front().to_string());
        members.push_back(std::make_unique<quorum_member>(
            std::make_unique<cluster_router>(p, m, std::move(name))));
    }
    for (const sentinel_member& m : p.config.sentinel_masters) {
        members.push_back(std::make_unique<quorum_member>(
            std::make_unique<sentinel_router>(p, m, "sentinel master \"" + m.master_name + "\"")));
    }
    return members;
}

}  // namespace redlock::detail
