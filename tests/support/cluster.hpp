#pragma once

#include "support/redis_server.hpp"

#include <redlock/client.hpp>
#include <redlock/config.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace redlock_test {

/// The test clients' settings for `nodes`: connect_timeout 200 ms, request_timeout
/// 50 ms (both times slowdown(), support/slowdown.hpp), lock.ttl 2000 ms, retry {3 attempts, 50 ms
/// delay, 50 ms jitter}, reconnect {20 ms, 200 ms}; a logger that swallows everything (even node
/// counts and dead nodes are on purpose).
[[nodiscard]] auto fixture_config(std::vector<redlock::node_address> nodes)
    -> redlock::client_config;
/// redlock::client::create(settings); throws std::runtime_error with the error message.
[[nodiscard]] auto create_client(const redlock::client_config& settings) -> redlock::client;

/// N independent masters (5 by default) on free loopback ports, and a client
/// configuration pointing at them. The doctest fixture of the integration tests:
/// every case starts its own. Throws, and so fails the case, if a server does not
/// come up.
class cluster {
public:
    explicit cluster(int n = 5);
    /// N servers started with the same `options` (extra arguments, credentials, Unix
    /// sockets); command() and the count_holding() queries use their credentials.
    cluster(int n, const server_options& options);

    [[nodiscard]] auto operator[](std::size_t i) -> redis_server& { return servers_.at(i); }
    [[nodiscard]] auto operator[](std::size_t i) const -> const redis_server& {
        return servers_.at(i);
    }
    /// Same as operator[], for fixtures deriving from cluster.
    [[nodiscard]] auto node(std::size_t i) -> redis_server& { return servers_.at(i); }
    [[nodiscard]] auto size() const noexcept -> std::size_t { return servers_.size(); }
    [[nodiscard]] auto begin() noexcept { return servers_.begin(); }
    [[nodiscard]] auto end() noexcept { return servers_.end(); }
    [[nodiscard]] auto begin() const noexcept { return servers_.begin(); }
    [[nodiscard]] auto end() const noexcept { return servers_.end(); }

    /// fixture_config(the servers' addresses).
    [[nodiscard]] auto config() const -> redlock::client_config;
    /// create_client(config()).
    [[nodiscard]] auto make_client() const -> redlock::client;
    [[nodiscard]] auto make_client(const redlock::client_config& settings) const -> redlock::client;

    /// The key a lock on `resource` occupies on each server: key_prefix + its tagged form
    /// ("{resource}", or the resource as it is when it has a hash tag of its own).
    [[nodiscard]] auto key_of(std::string_view resource) const -> std::string;
    /// Its wait queue (queue_prefix + the tagged form) and fence counter (fence_prefix + it).
    [[nodiscard]] auto queue_key_of(std::string_view resource) const -> std::string;
    [[nodiscard]] auto fence_key_of(std::string_view resource) const -> std::string;
    /// How many running, unfrozen servers hold `full_key` (prefix included) ...
    [[nodiscard]] auto count_holding(const std::string& full_key) const -> int;
    /// ... and with exactly `value`.
    [[nodiscard]] auto count_holding(const std::string& full_key, const std::string& value) const
        -> int;
    /// Waits (at most scaled(5 s)) until every server holds `value` at the lock key of `resource`.
    /// A lock is handed out once a majority granted it; the last SETs may still be on their
    /// way, and a rival asking before they land can be granted (and release) a node between.
    [[nodiscard]] auto held_everywhere(std::string_view resource, const std::string& value) const
        -> bool;
    /// Sum of DBSIZE over the running, unfrozen servers.
    [[nodiscard]] auto total_keys() const -> long long;

private:
    std::vector<redis_server> servers_;
};

/// Waits (scaled(10 s) at most) until `client` can lock and unlock: its members have found their
/// masters (a cluster's slot map, the master a Sentinel names).
[[nodiscard]] auto warm_up(redlock::client& client) -> bool;

}  // namespace redlock_test
