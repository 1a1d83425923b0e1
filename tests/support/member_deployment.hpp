#pragma once

// A quorum of three members of the kinds a deployment may mix (README, "Cluster and Sentinel
// members"), for the tests that run every lock feature on every member kind: either three
// Redis Clusters, or one standalone master, one Redis Cluster and one Sentinel-managed master.

#include "support/cluster_member.hpp"
#include "support/redis_server.hpp"
#include "support/sentinel_member.hpp"

#include <redlock/config.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock_test {

enum class deployment_kind {
    /// Three Redis Clusters of two shards each, no replicas (six servers).
    three_clusters,
    /// A standalone master, a two-shard cluster and a Sentinel-managed master (one server,
    /// two cluster nodes, two data servers and three Sentinels).
    mixed,
};

/// The three members of `kind`, started and settled by the constructor (which throws, and so
/// fails the case, if one does not come up). Members are numbered as the client numbers them:
/// the standalone master first, then the clusters, then the Sentinel-managed master.
/// Not thread-safe: drive it from the test thread.
class member_deployment {
public:
    explicit member_deployment(deployment_kind kind);

    [[nodiscard]] auto kind() const noexcept -> deployment_kind { return kind_; }
    [[nodiscard]] auto name() const -> std::string;
    [[nodiscard]] static constexpr auto size() noexcept -> std::size_t { return 3; }

    /// fixture_config() naming the three members, with the settings routed members need: a
    /// connect timeout of 500 ms and a request timeout of 200 ms, both times slowdown() (a
    /// first slot map or master address costs a round trip or two more), a lock TTL of 3 s, and a
    /// waiter TTL of 200 ms, so that a waiter that no release notification reaches (README: cluster
    /// and Sentinel members re-check) looks again every 100 ms.
    [[nodiscard]] auto config() const -> redlock::client_config;

    /// True for a cluster or Sentinel member (its check() shows topology lines).
    [[nodiscard]] auto routed(std::size_t member) const -> bool;
    /// A member that is a Redis Cluster (the first one).
    [[nodiscard]] auto a_cluster() const -> std::size_t;
    /// The data server that serves `key` in `member` now: the standalone master, the master of
    /// the key's slot, or the master Sentinel names.
    [[nodiscard]] auto server_for(std::size_t member, const std::string& key) const
        -> const redis_server&;
    /// GET `key` in `member` (nullopt when it does not exist).
    [[nodiscard]] auto get(std::size_t member, const std::string& key) const
        -> std::optional<std::string>;
    /// Runs `argv` on server_for(member, key).
    auto command(std::size_t member, const std::string& key,
                 const std::vector<std::string>& argv) const -> std::optional<std::string>;
    /// In how many members `key` holds `value`.
    [[nodiscard]] auto holding(const std::string& key, const std::string& value) const -> int;
    /// In how many members `key` exists.
    [[nodiscard]] auto with_key(const std::string& key) const -> int;

private:
    deployment_kind kind_;
    std::optional<redis_server> standalone_;
    std::vector<std::unique_ptr<cluster_member>> clusters_;
    std::unique_ptr<sentinel_member> sentinel_;
};

/// The lock key, wait queue and fence counter of `resource` with the default prefixes.
[[nodiscard]] auto lock_key_of(const std::string& resource) -> std::string;
[[nodiscard]] auto queue_key_of(const std::string& resource) -> std::string;
[[nodiscard]] auto fence_key_of(const std::string& resource) -> std::string;

}  // namespace redlock_test
