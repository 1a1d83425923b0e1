#include "support/member_deployment.hpp"

#include "sansio/hash_slot.hpp"
#include "support/cluster.hpp"
#include "support/slowdown.hpp"

#include <chrono>
#include <stdexcept>

namespace redlock_test {

using namespace std::chrono_literals;

namespace {

auto two_shards() -> std::unique_ptr<cluster_member> {
    return std::make_unique<cluster_member>(
        cluster_member_options{.shards = 2, .replicas = 0, .node_timeout = 1000ms, .server = {}});
}

}  // namespace

member_deployment::member_deployment(deployment_kind kind) : kind_{kind} {
    if (kind == deployment_kind::three_clusters) {
        for (int i = 0; i < 3; ++i) clusters_.push_back(two_shards());
    } else {
        standalone_.emplace();
        clusters_.push_back(two_shards());
        sentinel_ = std::make_unique<sentinel_member>();
    }
}

auto member_deployment::name() const -> std::string {
    return kind_ == deployment_kind::three_clusters ? "three clusters"
                                                    : "standalone + cluster + Sentinel";
}

auto member_deployment::config() const -> redlock::client_config {
    redlock::client_config config = fixture_config(
        standalone_ ? std::vector{standalone_->address()} : std::vector<redlock::node_address>{});
    for (const auto& c : clusters_) {
        redlock::cluster_member m;
        m.seeds = c->seeds();
        config.clusters.push_back(std::move(m));
    }
    if (sentinel_) {
        redlock::sentinel_member m;
        m.sentinels = sentinel_->sentinels();
        m.master_name = sentinel_->master_name();
        config.sentinel_masters.push_back(std::move(m));
    }
    config.connect_timeout = scaled(500ms);
    config.request_timeout = scaled(200ms);
    config.lock.ttl = 3000ms;
    config.lock.waiter_ttl = 200ms;
    return config;
}

auto member_deployment::routed(std::size_t member) const -> bool {
    return !(standalone_ && member == 0);
}

auto member_deployment::a_cluster() const -> std::size_t {
    return standalone_ ? 1 : 0;
}

auto member_deployment::server_for(std::size_t member, const std::string& key) const
    -> const redis_server& {
    if (member >= size())
        throw std::logic_error("member_deployment: no member " + std::to_string(member));
    std::size_t i = member;
    if (standalone_) {
        if (i == 0) return *standalone_;
        --i;
    }
    if (i < clusters_.size()) {
        const cluster_member& c = *clusters_[i];
        return c.node(c.master_of_slot(redlock::detail::key_slot(key)));
    }
    return sentinel_->server(sentinel_->master_index());
}

auto member_deployment::get(std::size_t member, const std::string& key) const
    -> std::optional<std::string> {
    return server_for(member, key).get(key);
}

auto member_deployment::command(std::size_t member, const std::string& key,
                                const std::vector<std::string>& argv) const
    -> std::optional<std::string> {
    return server_for(member, key).command(argv);
}

auto member_deployment::holding(const std::string& key, const std::string& value) const -> int {
    int n = 0;
    for (std::size_t m = 0; m < size(); ++m) n += get(m, key) == value ? 1 : 0;
    return n;
}

auto member_deployment::with_key(const std::string& key) const -> int {
    int n = 0;
    for (std::size_t m = 0; m < size(); ++m) n += server_for(m, key).exists(key) ? 1 : 0;
    return n;
}

auto lock_key_of(const std::string& resource) -> std::string {
    return "redlock:" + redlock::detail::tagged_resource(resource);
}

auto queue_key_of(const std::string& resource) -> std::string {
    return "redlock-queue:" + redlock::detail::tagged_resource(resource);
}

auto fence_key_of(const std::string& resource) -> std::string {
    return "redlock-fence:" + redlock::detail::tagged_resource(resource);
}

}  // namespace redlock_test
