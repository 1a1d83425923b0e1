#include "cluster_setup.hpp"

#include <fstream>

namespace redlock_torture {
namespace {

auto member_json(const redlock_test::cluster_member& member, std::uint64_t wait_replicas)
    -> std::string {
    std::string seeds;
    for (const auto& seed : member.seeds()) {
        seeds += std::string{seeds.empty() ? "" : ", "} + R"({"host": "127.0.0.1", "port": )" +
                 std::to_string(seed.port) + "}";
    }
    return R"({"seeds": [)" + seeds + R"(], "wait_replicas": )" + std::to_string(wait_replicas) +
           "}";
}

}  // namespace

auto members_config_json(const std::vector<redlock_test::cluster_member>& members,
                         const cluster_client_settings& settings) -> std::string {
    std::string clusters;
    for (const auto& m : members) {
        clusters +=
            (clusters.empty() ? "" : ",\n               ") + member_json(m, settings.wait_replicas);
    }
    return R"({
  "clusters": [)" +
           clusters + R"(],
  "connect_timeout_ms": 500,
  "request_timeout_ms": 200,
  "restart_quarantine_ms": )" +
           std::to_string(settings.quarantine_ms) + R"(,
  "lock": {"ttl_ms": )" +
           std::to_string(settings.ttl.count()) + R"(, "fencing": true, "waiter_ttl_ms": )" +
           std::to_string(settings.waiter_ttl.count()) + R"(},
  "retry": {"attempts": 3, "delay_ms": 30, "jitter_ms": 40},
  "reconnect": {"min_delay_ms": 20, "max_delay_ms": 200}
}
)";
}

auto failover_warnings(const std::filesystem::path& dir, const std::string& prefix, int count)
    -> std::size_t {
    std::size_t n = 0;
    for (int i = 0; i < count; ++i) {
        std::ifstream log{dir / (prefix + std::to_string(i) + ".log")};
        for (std::string line; std::getline(log, line);)
            n += line.find("not a master before") != std::string::npos ? 1 : 0;
    }
    return n;
}

}  // namespace redlock_torture
