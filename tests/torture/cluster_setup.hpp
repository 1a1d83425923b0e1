#pragma once

// What the cluster-member torture test (cluster_members_test.cpp) gives its clients and reads
// back from their logs, besides the faults: the members' client configuration, shared by the
// workers and the election candidates, and the clients' failover warnings.

#include "support/cluster_member.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace redlock_torture {

struct cluster_client_settings {
    std::uint64_t wait_replicas = 0;
    std::uint64_t quarantine_ms = 1000;   ///< restart_quarantine_ms
    std::chrono::milliseconds ttl{1000};  ///< lock.ttl_ms: the longest TTL the clients use
    std::chrono::milliseconds waiter_ttl{2000};
};

/// A client configuration with `members` as its cluster members, seeded with every node.
/// A member's first answers cost a map read more than a standalone node's, and 12 servers share
/// the cores with the workers: a request timeout of 200 ms, as members_test.cpp uses.
[[nodiscard]] auto members_config_json(const std::vector<redlock_test::cluster_member>& members,
                                       const cluster_client_settings& settings) -> std::string;

/// The clients' warnings that they saw a slot change master to a node that was no master
/// before (cluster_routing's notes) in the logs `dir`/`prefix`0.log .. (`count` - 1): how often
/// the failover rule was applied.
[[nodiscard]] auto failover_warnings(const std::filesystem::path& dir, const std::string& prefix,
                                     int count) -> std::size_t;

}  // namespace redlock_torture
