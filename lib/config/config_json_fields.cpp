// Reading the fields of a parsed configuration document into a client_config:
// which keys exist at each level, their types, the values client_config cannot
// represent (a port above 65535, an integer above 2^31-1), required fields and
// the password variable. The value rules (ranges, cross-field checks) are
// validate_config's, which runs last, so that a configuration built in code and
// one read from a file are held to exactly the same rules. Values are only
// read after their type was checked, so nlohmann never throws here.

#include "config/config_json_fields.hpp"

#include "config/config_json_errors.hpp"
#include "config/config_json_members.hpp"
#include "redlock/config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace redlock::detail {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

constexpr std::int64_t max_integer = std::numeric_limits<std::int32_t>::max();

constexpr std::array<std::string_view, 17> top_level_keys{"nodes",
                                                          "clusters",
                                                          "sentinel_masters",
                                                          "tls",
                                                          "max_concurrent_acquisitions",
                                                          "queue_prefix",
                                                          "restart_quarantine_ms",
                                                          "key_prefix",
                                                          "fence_prefix",
                                                          "connect_timeout_ms",
                                                          "request_timeout_ms",
                                                          "clock_drift_factor",
                                                          "clock_drift_floor_ms",
                                                          "lock",
                                                          "retry",
                                                          "reconnect",
                                                          "auth"};
constexpr std::array<std::string_view, 4> node_keys{"host", "port", "unix", "tls"};
constexpr std::array<std::string_view, 5> tls_keys{"ca_file", "cert_file", "key_file",
                                                   "server_name", "verify"};
constexpr std::array<std::string_view, 8> lock_field_names{
    "ttl_ms", "min_validity_ms", "auto_renew",   "renew_fraction", "fencing",
    "wait",   "waiter_ttl_ms",   "lock_delay_ms"};
constexpr std::array<std::string_view, 3> retry_keys{"attempts", "delay_ms", "jitter_ms"};
constexpr std::array<std::string_view, 2> reconnect_keys{"min_delay_ms", "max_delay_ms"};
constexpr std::array<std::string_view, 2> auth_keys{"username", "password_env"};

/// Walks the parsed document. Every read_* returns false after recording the
/// first error; absent optional fields keep client_config's defaults.
class document_reader {
public:
    document_reader(std::string_view source, std::filesystem::path base_dir)
        : source_{source}, base_dir_{std::move(base_dir)} {}

    auto read(const json& root) -> result<client_config, config_error> {
        client_config config;
        if (!read_root(root, config)) return failure{std::move(*error_)};
        resolve_relative_paths(config);
        if (auto problem = validate_config(config, source_)) return failure{std::move(*problem)};
        return config;
    }

    // The field readers below are public for read_members (config_json_members.hpp).
    /// A TLS file named in a config file is found next to it, wherever the
    /// program that loads it runs (a config found in /etc/redlock names its
    /// CA as "ca.crt"). Absolute paths stay as they are; a Unix socket path
    /// must be absolute anyway.
    void resolve_relative_paths(client_config& config) const {
        if (base_dir_.empty()) return;
        const auto resolve = [this](std::string& path) {
            if (!path.empty() && std::filesystem::path{path}.is_relative())
                path = (base_dir_ / path).string();
        };
        if (config.tls) {
            resolve(config.tls->ca_file);
            resolve(config.tls->cert_file);
            resolve(config.tls->key_file);
        }
    }

    auto fail(std::string field, std::string message) -> bool {
        if (!error_) error_ = config_error{source_, std::move(field), std::move(message)};
        return false;
    }

    /// The value must be an object holding only the listed keys.
    auto check_object(const json& value, const std::string& pointer,
                      std::span<const std::string_view> known) -> bool {
        if (!value.is_object())
            return fail(pointer, "must be an object (got " + describe_json_value(value) + ")");
        for (const auto& item : value.items()) {
            const std::string& key = item.key();
            if (std::ranges::find(known, key) != known.end()) continue;
            // A typo must not silently fall back to the default: "ttl_msec"
            // would otherwise leave the TTL at 10 s without a word.
            return fail(json_pointer(pointer, key), unknown_field_message(key, known));
        }
        return true;
    }

    auto read_string(const json& object, std::string_view key, const std::string& pointer,
                     std::string& out, bool non_empty = false) -> bool {
        const auto it = object.find(key);
        if (it == object.end()) return true;
        const std::string field = json_pointer(pointer, key);
        if (!it->is_string())
            return fail(field, "must be a string (got " + describe_json_value(*it) + ")");
        const auto& text = it->get_ref<const std::string&>();
        if (non_empty && text.empty()) return fail(field, "must not be empty");
        out = text;
        return true;
    }

    auto read_wait_mode(const json& object, const std::string& pointer, wait_mode& out) -> bool {
        std::string text;
        if (!object.contains("wait")) return true;
        if (!read_string(object, "wait", pointer, text)) return false;
        static constexpr std::array<std::pair<std::string_view, wait_mode>, 4> modes{{
            {"targeted", wait_mode::targeted},
            {"fair", wait_mode::fair},
            {"broadcast", wait_mode::broadcast},
            {"poll", wait_mode::poll},
        }};
        for (const auto& [name, mode] : modes) {
            if (text == name) {
                out = mode;
                return true;
            }
        }
        return fail(json_pointer(pointer, "wait"),
                    "must be one of \"targeted\", \"fair\", \"broadcast\", \"poll\" (got \"" +
                        text + "\")");
    }

    auto read_bool(const json& object, std::string_view key, const std::string& pointer, bool& out)
        -> bool {
        const auto it = object.find(key);
        if (it == object.end()) return true;
        if (!it->is_boolean())
            return fail(json_pointer(pointer, key),
                        "must be a boolean (got " + describe_json_value(*it) + ")");
        out = it->get<bool>();
        return true;
    }

    auto read_number(const json& object, std::string_view key, const std::string& pointer,
                     double& out) -> bool {
        const auto it = object.find(key);
        if (it == object.end()) return true;
        if (!it->is_number())
            return fail(json_pointer(pointer, key),
                        "must be a number (got " + describe_json_value(*it) + ")");
        out = it->get<double>();
        return true;
    }

    /// A JSON integer no larger than 2^31-1. Negative values are kept as they
    /// are (std::int64_t holds every one nlohmann can produce) for
    /// validate_config to reject with the rule of the field.
    auto read_integer(const json& value, const std::string& field, std::int64_t& out) -> bool {
        if (!value.is_number_integer())
            return fail(field, "must be an integer (got " + describe_json_value(value) + ")");
        const bool too_large = value.is_number_unsigned()
                                   ? value.get<std::uint64_t>() > std::uint64_t{max_integer}
                                   : value.get<std::int64_t>() > max_integer;
        if (too_large) return fail(field, "must be at most 2147483647 (got " + value.dump() + ")");
        out = value.get<std::int64_t>();
        return true;
    }

    auto read_ms(const json& object, std::string_view key, const std::string& pointer,
                 milliseconds& out) -> bool {
        const auto it = object.find(key);
        if (it == object.end()) return true;
        std::int64_t value = 0;
        if (!read_integer(*it, json_pointer(pointer, key), value)) return false;
        out = milliseconds{value};
        return true;
    }

    auto read_int(const json& object, std::string_view key, const std::string& pointer, int& out,
                  std::string_view below_int_message) -> bool {
        const auto it = object.find(key);
        if (it == object.end()) return true;
        const std::string field = json_pointer(pointer, key);
        std::int64_t value = 0;
        if (!read_integer(*it, field, value)) return false;
        if (value < std::numeric_limits<int>::min())
            return fail(field, std::string{below_int_message} + " (got " + it->dump() + ")");
        out = static_cast<int>(value);
        return true;
    }

    auto read_node(const json& value, const std::string& pointer, node_address& out) -> bool {
        if (!check_object(value, pointer, node_keys)) return false;
        const bool has_host = value.contains("host");
        const bool has_unix = value.contains("unix");
        if (has_host && has_unix)
            return fail(pointer, "must have either \"host\" or \"unix\", not both");
        if (!has_host && !has_unix) return fail(pointer, "must have either \"host\" or \"unix\"");
        if (!read_bool(value, "tls", pointer, out.tls)) return false;
        if (has_unix) {
            if (value.contains("port"))
                return fail(json_pointer(pointer, "port"), "is only allowed with \"host\"");
            return read_string(value, "unix", pointer, out.unix_path, /*non_empty=*/true);
        }
        if (!read_string(value, "host", pointer, out.host, /*non_empty=*/true)) return false;
        if (const auto port = value.find("port"); port != value.end()) {
            const std::string field = json_pointer(pointer, "port");
            if (!port->is_number_integer())
                return fail(field, "must be an integer (got " + describe_json_value(*port) + ")");
            // 0 fits and is left to validate_config, which rejects it the same way.
            const bool in_range =
                port->is_number_unsigned() && port->get<std::uint64_t>() <= std::uint64_t{65535};
            if (!in_range)
                return fail(field, "must be an integer in 1..65535 (got " + port->dump() + ")");
            out.port = static_cast<std::uint16_t>(port->get<std::uint64_t>());
        }
        return true;
    }

    auto read_nodes(const json& root, client_config& config) -> bool {
        const auto nodes = root.find("nodes");
        if (nodes == root.end()) {
            // Clusters or Sentinel-managed masters alone make a quorum too.
            if (root.contains("clusters") || root.contains("sentinel_masters")) return true;
            return fail("/nodes", "is required");
        }
        if (!nodes->is_array())
            return fail("/nodes", "must be an array (got " + describe_json_value(*nodes) + ")");
        // An empty array is left to validate_config.
        config.nodes.reserve(nodes->size());
        for (std::size_t i = 0; i < nodes->size(); ++i) {
            node_address node;
            if (!read_node((*nodes)[i], json_pointer("/nodes", i), node)) return false;
            config.nodes.push_back(std::move(node));
        }
        return true;
    }

    /// {"username", "password_env"} at `pointer`: the password read from the
    /// variable named (never printed; messages name the variable only).
    auto read_credentials(const json& auth, const std::string& pointer, std::string& username,
                          std::string& password_env, secret& password) -> bool {
        if (!check_object(auth, pointer, auth_keys)) return false;
        if (!read_string(auth, "username", pointer, username)) return false;
        const std::string field = pointer + "/password_env";
        if (!auth.contains("password_env")) return fail(field, "is required");
        if (!read_string(auth, "password_env", pointer, password_env, /*non_empty=*/true))
            return false;
        const std::string& name = password_env;
        // getenv would silently read a shorter name at an embedded NUL.
        if (name.find_first_of(std::string_view{"=\0", 2}) != std::string::npos)
            return fail(field, "must be an environment variable name (no '=' or NUL)");
        const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe)
        if (value == nullptr) return fail(field, "environment variable " + name + " is not set");
        if (*value == '\0') return fail(field, "environment variable " + name + " is empty");
        password = secret{value};
        return true;
    }

    auto read_root(const json& root, client_config& config) -> bool {
        if (!root.is_object()) return fail("", "the document must be a JSON object");
        if (!check_object(root, "", top_level_keys)) return false;
        if (!read_nodes(root, config) || !read_members(*this, root, config)) return false;
        if (!(read_string(root, "key_prefix", "", config.key_prefix) &&
              read_string(root, "fence_prefix", "", config.fence_prefix) &&
              read_string(root, "queue_prefix", "", config.queue_prefix, true) &&
              read_ms(root, "connect_timeout_ms", "", config.connect_timeout) &&
              read_ms(root, "request_timeout_ms", "", config.request_timeout) &&
              read_int(root, "max_concurrent_acquisitions", "", config.max_concurrent_acquisitions,
                       "must be at least 0") &&
              read_number(root, "clock_drift_factor", "", config.clock_drift_factor) &&
              read_ms(root, "clock_drift_floor_ms", "", config.clock_drift_floor)))
            return false;
        if (root.contains("restart_quarantine_ms")) {
            milliseconds quarantine{0};
            if (!read_ms(root, "restart_quarantine_ms", "", quarantine)) return false;
            config.restart_quarantine = quarantine;
        }

        if (const auto lock = root.find("lock"); lock != root.end()) {
            const std::string p = "/lock";
            auto& l = config.lock;
            if (!(check_object(*lock, p, lock_field_names) && read_ms(*lock, "ttl_ms", p, l.ttl) &&
                  read_ms(*lock, "min_validity_ms", p, l.min_validity) &&
                  read_bool(*lock, "auto_renew", p, l.auto_renew) &&
                  read_number(*lock, "renew_fraction", p, l.renew_fraction) &&
                  read_bool(*lock, "fencing", p, l.fencing) &&
                  read_ms(*lock, "waiter_ttl_ms", p, l.waiter_ttl) &&
                  read_ms(*lock, "lock_delay_ms", p, l.lock_delay) &&
                  read_wait_mode(*lock, p, l.wait)))
                return false;
        }
        if (const auto retry = root.find("retry"); retry != root.end()) {
            const std::string p = "/retry";
            auto& r = config.retry;
            if (!(check_object(*retry, p, retry_keys) &&
                  read_int(*retry, "attempts", p, r.attempts, "must be at least 1") &&
                  read_ms(*retry, "delay_ms", p, r.delay) &&
                  read_ms(*retry, "jitter_ms", p, r.jitter)))
                return false;
        }
        if (const auto reconnect = root.find("reconnect"); reconnect != root.end()) {
            const std::string p = "/reconnect";
            auto& r = config.reconnect;
            if (!(check_object(*reconnect, p, reconnect_keys) &&
                  read_ms(*reconnect, "min_delay_ms", p, r.min_delay) &&
                  read_ms(*reconnect, "max_delay_ms", p, r.max_delay)))
                return false;
        }
        if (const auto auth = root.find("auth"); auth != root.end()) {
            if (!read_credentials(*auth, "/auth", config.username, config.password_env,
                                  config.password))
                return false;
        }
        if (const auto tls = root.find("tls"); tls != root.end()) {
            // Files are checked by validate_config, the same for code and JSON.
            const std::string p = "/tls";
            auto& t = config.tls.emplace();
            if (!(check_object(*tls, p, tls_keys) &&
                  read_string(*tls, "ca_file", p, t.ca_file, true) &&
                  read_string(*tls, "cert_file", p, t.cert_file, true) &&
                  read_string(*tls, "key_file", p, t.key_file, true) &&
                  read_string(*tls, "server_name", p, t.server_name, true) &&
                  read_bool(*tls, "verify", p, t.verify)))
                return false;
        }
        return true;
    }

private:
    std::string source_;
    std::filesystem::path base_dir_;
    std::optional<config_error> error_;
};

}  // namespace

auto read_config_document(const json& root, std::string_view source,
                          const std::filesystem::path& base_dir)
    -> result<client_config, config_error> {
    return document_reader{source, base_dir}.read(root);
}

}  // namespace redlock::detail
