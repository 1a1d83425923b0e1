// The value rules of a client_config, shared by configurations read from JSON
// (parse_config ends here) and configurations built in code (client::create
// runs it). Fields are named by the JSON pointers of the schema in
// configs/README.md, so a message reads the same whichever way the value came.

#include "config/member_overlap.hpp"
#include "config/node_alias.hpp"
#include "redlock/config.hpp"
#include "sansio/timing.hpp"

#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <sys/un.h>
#include <system_error>
#include <utility>
#include <vector>

namespace redlock {

using std::chrono::milliseconds;

namespace {

constexpr std::int64_t max_integer = std::numeric_limits<std::int32_t>::max();

/// sun_path holds the path and its terminating NUL.
constexpr std::size_t max_unix_path = sizeof(sockaddr_un::sun_path) - 1;

auto format(double value) -> std::string {
    std::array<char, 64> buffer{};
    const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    if (ec != std::errc{}) return "?";
    return {buffer.data(), end};
}

auto got(std::int64_t value) -> std::string {
    return " (got " + std::to_string(value) + ")";
}

enum class lower_bound { positive, non_negative };

/// Every duration is a JSON integer in the file; the same range applies in code.
auto duration_problem(milliseconds value, lower_bound bound) -> std::optional<std::string> {
    const std::int64_t v = value.count();
    if (bound == lower_bound::positive && v <= 0) return "must be greater than 0" + got(v);
    if (bound == lower_bound::non_negative && v < 0) return "must be at least 0" + got(v);
    if (v > max_integer) return "must be at most 2147483647" + got(v);
    return std::nullopt;
}

/// A TLS file must be readable now: a typo shows when the client is built,
/// not as a node that can never be reached. Its contents are OpenSSL's to
/// judge (tls_context::create, at client::create).
auto tls_file_problem(const std::string& path) -> std::optional<std::string> {
    if (path.empty()) return std::nullopt;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
        const int err = errno;
        return "cannot read \"" + path + "\": " + std::generic_category().message(err);
    }
    (void)std::fclose(f);
    return std::nullopt;
}

auto tls_problem(const tls_options& tls) -> std::optional<std::pair<std::string, std::string>> {
    if (tls.cert_file.empty() != tls.key_file.empty()) {
        return tls.cert_file.empty()
                   ? std::pair<std::string, std::string>{"/tls/cert_file",
                                                         "is required with /tls/key_file"}
                   : std::pair<std::string, std::string>{"/tls/key_file",
                                                         "is required with /tls/cert_file"};
    }
    const std::array<std::pair<const char*, const std::string*>, 3> files{{
        {"/tls/ca_file", &tls.ca_file},
        {"/tls/cert_file", &tls.cert_file},
        {"/tls/key_file", &tls.key_file},
    }};
    for (const auto& [field, path] : files) {
        if (auto why = tls_file_problem(*path)) return {{field, std::move(*why)}};
    }
    return std::nullopt;
}

auto same_host(std::string_view a, std::string_view b) -> bool {
    // Host names are case-insensitive (RFC 4343); addresses have no letters
    // but hex digits, which compare the same way.
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto ca = static_cast<unsigned char>(a[i]);
        const auto cb = static_cast<unsigned char>(b[i]);
        if (std::tolower(ca) != std::tolower(cb)) return false;
    }
    return true;
}

auto same_node(const node_address& a, const node_address& b) -> bool {
    if (a.is_unix() || b.is_unix()) return a.is_unix() && b.is_unix() && a.unix_path == b.unix_path;
    return a.port == b.port && same_host(a.host, b.host);
}

auto node_problem(const node_address& node, const std::string& pointer)
    -> std::optional<std::pair<std::string, std::string>> {
    const bool has_host = !node.host.empty();
    if (has_host && node.is_unix())
        return {{pointer, "must have either \"host\" or \"unix\", not both"}};
    if (!has_host && !node.is_unix()) return {{pointer, "must have either \"host\" or \"unix\""}};
    if (node.is_unix()) {
        if (!node.unix_path.starts_with('/'))
            return {
                {pointer + "/unix", "must be an absolute path (got \"" + node.unix_path + "\")"}};
        if (node.unix_path.size() > max_unix_path)
            return {{pointer + "/unix", "must be at most " + std::to_string(max_unix_path) +
                                            " bytes long, the limit of a Unix socket path" +
                                            got(static_cast<std::int64_t>(node.unix_path.size()))}};
        return std::nullopt;
    }
    if (node.port == 0) return {{pointer + "/port", "must be an integer in 1..65535 (got 0)"}};
    return std::nullopt;
}

/// The cluster and Sentinel members: seeds and sentinels well-formed, a master
/// name, wait_replicas and refresh intervals in range.
auto members_problem(const client_config& config)
    -> std::optional<std::pair<std::string, std::string>> {
    const auto nodes_problem =
        [](const std::vector<node_address>& list,
           const std::string& pointer) -> std::optional<std::pair<std::string, std::string>> {
        if (list.empty()) return {{pointer, "must contain at least one node"}};
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (auto problem = node_problem(list[i], pointer + "/" + std::to_string(i)))
                return problem;
        }
        return std::nullopt;
    };
    const auto common =
        [](const std::string& pointer, int wait_replicas,
           milliseconds refresh) -> std::optional<std::pair<std::string, std::string>> {
        if (wait_replicas < 0 || wait_replicas > 64)
            return {{pointer + "/wait_replicas", "must be between 0 and 64" + got(wait_replicas)}};
        if (refresh.count() <= 0)
            return {{pointer + "/refresh_ms",
                     "must be a positive number of milliseconds" + got(refresh.count())}};
        return std::nullopt;
    };
    for (std::size_t i = 0; i < config.clusters.size(); ++i) {
        const std::string pointer = "/clusters/" + std::to_string(i);
        const cluster_member& m = config.clusters[i];
        if (auto p = nodes_problem(m.seeds, pointer + "/seeds")) return p;
        if (auto p = common(pointer, m.wait_replicas, m.refresh_interval)) return p;
    }
    for (std::size_t i = 0; i < config.sentinel_masters.size(); ++i) {
        const std::string pointer = "/sentinel_masters/" + std::to_string(i);
        const sentinel_member& m = config.sentinel_masters[i];
        if (auto p = nodes_problem(m.sentinels, pointer + "/sentinels")) return p;
        if (m.master_name.empty()) return {{pointer + "/master_name", "must not be empty"}};
        if (auto p = common(pointer, m.wait_replicas, m.refresh_interval)) return p;
    }
    return std::nullopt;
}

}  // namespace

auto validate_config(const client_config& config, std::string_view source)
    -> std::optional<config_error> {
    const auto reject = [&](std::string field, std::string message) {
        return config_error{std::string{source}, std::move(field), std::move(message)};
    };

    // Nodes: at least one, each well-formed, no server twice. A server listed
    // twice grants a lock only once (SET NX), so acquisition stays safe, but
    // the cluster tolerates fewer failures than its node count promises.
    // Aliases that only a lookup or a connection could reveal are left to
    // client::check, which compares run_ids.
    if (config.member_count() == 0)
        return reject("/nodes",
                      "must contain at least one node (or give \"clusters\" or "
                      "\"sentinel_masters\")");
    if (auto problem = members_problem(config))
        return reject(std::move(problem->first), std::move(problem->second));
    std::vector<detail::node_identity> identities;
    identities.reserve(config.nodes.size());
    for (std::size_t i = 0; i < config.nodes.size(); ++i) {
        const std::string pointer = "/nodes/" + std::to_string(i);
        const node_address& node = config.nodes[i];
        if (auto problem = node_problem(node, pointer))
            return reject(std::move(problem->first), std::move(problem->second));
        identities.push_back(detail::identify(node));
        for (std::size_t j = 0; j < i; ++j) {
            const auto earlier = [&] {
                return "/nodes/" + std::to_string(j) + " (" + config.nodes[j].to_string() + ")";
            };
            if (same_node(config.nodes[j], node))
                return reject(pointer, "duplicate of " + earlier());
            if (auto why = detail::alias_reason(identities[j], identities[i]))
                return reject(pointer, node.to_string() + " is the same server as " + earlier() +
                                           ": " + *why);
        }
    }
    // A cluster or Sentinel-managed master listed twice, or one server in two
    // roles: it would count twice toward the quorum (member_overlap.hpp).
    if (auto problem = detail::member_overlap_problem(config))
        return reject(std::move(problem->first), std::move(problem->second));

    if (config.tls) {
        if (auto problem = tls_problem(*config.tls))
            return reject(std::move(problem->first), std::move(problem->second));
    }

    using enum lower_bound;
    struct duration_rule {
        const char* field;
        milliseconds value;
        lower_bound bound;
    };
    const std::array durations{
        duration_rule{"/connect_timeout_ms", config.connect_timeout, positive},
        duration_rule{"/request_timeout_ms", config.request_timeout, positive},
        duration_rule{"/clock_drift_floor_ms", config.clock_drift_floor, non_negative},
        duration_rule{"/lock/ttl_ms", config.lock.ttl, positive},
        duration_rule{"/lock/min_validity_ms", config.lock.min_validity, positive},
        duration_rule{"/lock/waiter_ttl_ms", config.lock.waiter_ttl, positive},
        duration_rule{"/lock/lock_delay_ms", config.lock.lock_delay, non_negative},
        duration_rule{"/retry/delay_ms", config.retry.delay, positive},
        duration_rule{"/retry/jitter_ms", config.retry.jitter, non_negative},
        duration_rule{"/reconnect/min_delay_ms", config.reconnect.min_delay, positive},
        duration_rule{"/reconnect/max_delay_ms", config.reconnect.max_delay, positive},
    };
    for (const auto& rule : durations) {
        if (auto problem = duration_problem(rule.value, rule.bound))
            return reject(rule.field, std::move(*problem));
    }

    // The nodes are given TTL + lock-delay, in one PX argument.
    if (config.lock.ttl.count() + config.lock.lock_delay.count() > max_integer)
        return reject("/lock/lock_delay_ms", "with /lock/ttl_ms must be at most 2147483647 (got " +
                                                 std::to_string(config.lock.ttl.count()) + " + " +
                                                 std::to_string(config.lock.lock_delay.count()) +
                                                 ")");

    // Written so that NaN fails too.
    const double drift = config.clock_drift_factor;
    if (!(drift >= 0.0 && drift < 0.5))
        return reject("/clock_drift_factor",
                      "must be at least 0 and less than 0.5 (got " + format(drift) + ")");
    const double renew = config.lock.renew_fraction;
    if (!(renew > 0.0 && renew < 1.0))
        return reject("/lock/renew_fraction",
                      "must be greater than 0 and less than 1 (got " + format(renew) + ")");
    if (config.max_concurrent_acquisitions < 0)
        return reject("/max_concurrent_acquisitions",
                      "must be at least 0 (0: no limit)" + got(config.max_concurrent_acquisitions));
    if (config.retry.attempts < 1)
        return reject("/retry/attempts", "must be at least 1" + got(config.retry.attempts));

    // Every key of a lock is prefix + "{resource}" (or the resource's own hash
    // tag) + suffix, so that all of them hash to one slot: a brace in a prefix
    // would make the prefix's text the hash tag instead.
    for (const auto& [field, prefix] : {std::pair{"/key_prefix", &config.key_prefix},
                                        std::pair{"/fence_prefix", &config.fence_prefix},
                                        std::pair{"/queue_prefix", &config.queue_prefix}}) {
        if (prefix->find_first_of("{}") != std::string::npos)
            return reject(field,
                          "must not contain '{' or '}': the hash tag of a lock's keys "
                          "must come from the resource, so that every key of one lock "
                          "hashes to one slot");
    }

    if (config.lock.fencing && (config.key_prefix.starts_with(config.fence_prefix) ||
                                config.fence_prefix.starts_with(config.key_prefix)))
        return reject("/fence_prefix",
                      "must not start with /key_prefix, nor /key_prefix with it (they would let a "
                      "lock key and a fencing counter key collide)");

    if (config.restart_quarantine && config.restart_quarantine->count() < 0)
        return reject("/restart_quarantine_ms",
                      "must be 0 (off) or more" + got(config.restart_quarantine->count()));

    // Cross-field rules, after every field is known to be in range.
    const std::int64_t ttl = config.lock.ttl.count();
    if (config.request_timeout.count() >= ttl)
        return reject("/request_timeout_ms", "must be less than /lock/ttl_ms (" +
                                                 std::to_string(ttl) + ")" +
                                                 got(config.request_timeout.count()));
    if (config.lock.min_validity.count() >= ttl)
        return reject("/lock/min_validity_ms", "must be less than /lock/ttl_ms (" +
                                                   std::to_string(ttl) + ")" +
                                                   got(config.lock.min_validity.count()));
    const auto ttl_drift =
        detail::clock_drift(config.lock.ttl, config.clock_drift_factor, config.clock_drift_floor);
    if (ttl_drift + config.lock.min_validity >= config.lock.ttl)
        return reject("/lock/ttl_ms", "leaves no validity: clock drift (" +
                                          std::to_string(ttl_drift.count()) +
                                          " ms) plus /lock/min_validity_ms (" +
                                          std::to_string(config.lock.min_validity.count()) +
                                          " ms) must be less than it" + got(ttl));
    if (config.reconnect.max_delay < config.reconnect.min_delay)
        return reject("/reconnect/max_delay_ms",
                      "must be at least /reconnect/min_delay_ms (" +
                          std::to_string(config.reconnect.min_delay.count()) + ")" +
                          got(config.reconnect.max_delay.count()));

    // AUTH with a user name needs a password. Only the names are ever shown.
    if (!config.username.empty() && config.password.empty())
        return reject("/auth/password_env",
                      config.password_env.empty()
                          ? "is required when /auth/username is set (no password)"
                          : "environment variable " + config.password_env +
                                " gave no password, which /auth/username requires");
    return std::nullopt;
}

}  // namespace redlock
