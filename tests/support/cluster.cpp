#include "support/cluster.hpp"

#include "sansio/hash_slot.hpp"
#include "support/slowdown.hpp"
#include "support/wait.hpp"

#include <chrono>
#include <stdexcept>
#include <utility>

namespace redlock_test {

using namespace std::chrono_literals;

namespace {

auto answers(const redis_server& s) -> bool {
    return s.running() && !s.frozen();
}

}  // namespace

cluster::cluster(int n) {
    if (n <= 0) throw std::invalid_argument("cluster: need at least one server");
    servers_.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) servers_.emplace_back();
}

cluster::cluster(int n, const server_options& options) {
    if (n <= 0) throw std::invalid_argument("cluster: need at least one server");
    servers_.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) servers_.emplace_back(options);
}

auto fixture_config(std::vector<redlock::node_address> nodes) -> redlock::client_config {
    redlock::client_config settings;
    settings.nodes = std::move(nodes);
    // Deadlines a healthy loopback node meets with room to spare on an idle plain build,
    // stretched by the tests' slowdown factor (support/slowdown.hpp); the TTL is not.
    settings.connect_timeout = scaled(200ms);
    settings.request_timeout = scaled(50ms);
    settings.lock.ttl = 2000ms;
    settings.retry = {.attempts = 3, .delay = 50ms, .jitter = 50ms};
    settings.reconnect = {.min_delay = 20ms, .max_delay = 200ms};
    settings.logger = [](redlock::log_level, std::string_view) {};
    return settings;
}

auto create_client(const redlock::client_config& settings) -> redlock::client {
    auto made = redlock::client::create(settings);
    if (!made) {
        throw std::runtime_error("redlock::client::create failed: " + made.error().message);
    }
    return std::move(*made);
}

auto cluster::config() const -> redlock::client_config {
    std::vector<redlock::node_address> nodes;
    for (const auto& s : servers_) nodes.push_back(s.address());
    return fixture_config(std::move(nodes));
}

auto cluster::make_client() const -> redlock::client {
    return create_client(config());
}

auto cluster::make_client(const redlock::client_config& settings) const -> redlock::client {
    return create_client(settings);
}

auto cluster::key_of(std::string_view resource) const -> std::string {
    return config().key_prefix + redlock::detail::tagged_resource(resource);
}

auto cluster::queue_key_of(std::string_view resource) const -> std::string {
    return config().queue_prefix + redlock::detail::tagged_resource(resource);
}

auto cluster::fence_key_of(std::string_view resource) const -> std::string {
    return config().fence_prefix + redlock::detail::tagged_resource(resource);
}

auto cluster::count_holding(const std::string& full_key) const -> int {
    int holding = 0;
    for (const auto& s : servers_) {
        if (answers(s) && s.exists(full_key)) ++holding;
    }
    return holding;
}

auto cluster::count_holding(const std::string& full_key, const std::string& value) const -> int {
    int holding = 0;
    for (const auto& s : servers_) {
        if (answers(s) && s.get(full_key) == value) ++holding;
    }
    return holding;
}

auto cluster::held_everywhere(std::string_view resource, const std::string& value) const -> bool {
    const std::string key = key_of(resource);
    return redlock_test::wait_until(
        scaled(5s), [&] { return count_holding(key, value) == static_cast<int>(servers_.size()); });
}

auto cluster::total_keys() const -> long long {
    long long keys = 0;
    for (const auto& s : servers_) {
        if (answers(s)) keys += s.dbsize();
    }
    return keys;
}

auto warm_up(redlock::client& client) -> bool {
    using namespace std::chrono_literals;
    return wait_until(scaled(10s), [&] {
        auto l = client.acquire("warm-up", {.ttl = 1000ms});
        return l && client.release(*l);
    });
}

}  // namespace redlock_test
