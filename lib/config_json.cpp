// Reading a client_config from JSON. No exception escapes: nlohmann is used with
// allow_exceptions=false, values are only read after their type was checked,
// and anything thrown anyway (std::bad_alloc) becomes a config_error.
//
// The parser checks what only the JSON can get wrong: syntax, duplicate and
// unknown keys, types, required fields, and values that cannot be represented
// in client_config (a port above 65535, an integer above 2^31-1). The value
// rules (ranges, cross-field checks) live in validate_config, which runs last,
// so that a configuration built in code and one read from a file are held to
// exactly the same rules and report the same JSON pointers.

#include "redlock/config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace redlock {

using std::chrono::milliseconds;

auto config_error::what() const -> std::string {
    std::string text;
    if (!file.empty()) text += file + ": ";
    if (!field.empty()) text += field + ": ";
    text += message;
    return text;
}

auto node_address::to_string() const -> std::string {
    if (is_unix()) return "unix:" + unix_path;
    // An IPv6 literal is bracketed so that the port stays unambiguous.
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

namespace {

using json = nlohmann::json;

constexpr std::int64_t max_integer = std::numeric_limits<std::int32_t>::max();
constexpr std::size_t max_file_size = std::size_t{16} << 20U;  // a config is a few hundred bytes

/// One reference token of a JSON pointer (RFC 6901): "~" -> "~0", "/" -> "~1".
auto escape_token(std::string_view token) -> std::string {
    std::string out;
    out.reserve(token.size());
    for (const char c : token) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

auto child(std::string_view parent, std::string_view key) -> std::string {
    return std::string{parent} + "/" + escape_token(key);
}

auto child(std::string_view parent, std::size_t index) -> std::string {
    return std::string{parent} + "/" + std::to_string(index);
}

auto edit_distance(std::string_view a, std::string_view b) -> std::size_t {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            const std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
            diagonal = above;
        }
    }
    return row[b.size()];
}

/// nlohmann keeps the last of two equal keys in an object. A repeated key is
/// as much a mistake as an unknown one (which of the two did the author mean?),
/// so the parse callback records the JSON pointer of the first repetition.
class duplicate_key_finder {
public:
    auto operator()(int /*depth*/, json::parse_event_t event, json& parsed) -> bool {
        switch (event) {
            case json::parse_event_t::object_start:
                stack_.push_back(frame{false, 0, {}, {}});
                break;
            case json::parse_event_t::array_start:
                stack_.push_back(frame{true, 0, {}, {}});
                break;
            case json::parse_event_t::key:
                if (!stack_.empty() && parsed.is_string()) {
                    frame& top = stack_.back();
                    top.key = parsed.get_ref<const std::string&>();
                    if (!top.keys.insert(top.key).second && !first_duplicate_)
                        first_duplicate_ = current_pointer();
                }
                break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                if (!stack_.empty()) stack_.pop_back();
                element_done();
                break;
            case json::parse_event_t::value:
                element_done();
                break;
        }
        return true;  // never filter: the document is kept whole
    }

    [[nodiscard]] auto first_duplicate() const -> const std::optional<std::string>& {
        return first_duplicate_;
    }

private:
    /// One open object or array. Only its own position is kept (the pointer is
    /// built on demand), so deeply nested input costs linear memory.
    struct frame {
        bool is_array;
        std::size_t index;
        std::string key;
        std::set<std::string, std::less<>> keys;
    };

    /// The pointer of the value at the current position: the current key of
    /// the innermost object.
    [[nodiscard]] auto current_pointer() const -> std::string {
        std::string pointer;
        for (const frame& f : stack_)
            pointer += "/" + (f.is_array ? std::to_string(f.index) : escape_token(f.key));
        return pointer;
    }

    void element_done() {
        if (!stack_.empty() && stack_.back().is_array) ++stack_.back().index;
    }

    std::vector<frame> stack_;
    std::optional<std::string> first_duplicate_;
};

/// With allow_exceptions=false a failed parse only says "discarded". To tell
/// the user where the error is, the text is parsed a second time with a SAX
/// handler that keeps nlohmann's parse error (its byte offset and message).
class parse_error_recorder final : public nlohmann::json_sax<json> {
public:
    auto null() -> bool override { return true; }
    auto boolean(bool /*val*/) -> bool override { return true; }
    auto number_integer(number_integer_t /*val*/) -> bool override { return true; }
    auto number_unsigned(number_unsigned_t /*val*/) -> bool override { return true; }
    auto number_float(number_float_t /*val*/, const string_t& /*s*/) -> bool override {
        return true;
    }
    auto string(string_t& /*val*/) -> bool override { return true; }
    auto binary(binary_t& /*val*/) -> bool override { return true; }
    auto start_object(std::size_t /*elements*/) -> bool override { return true; }
    auto key(string_t& /*val*/) -> bool override { return true; }
    auto end_object() -> bool override { return true; }
    auto start_array(std::size_t /*elements*/) -> bool override { return true; }
    auto end_array() -> bool override { return true; }
    auto parse_error(std::size_t position, const std::string& /*last_token*/,
                     const nlohmann::detail::exception& ex) -> bool override {
        std::string what = ex.what();
        // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
        if (const auto bracket = what.find("] "); what.starts_with('[') && bracket != what.npos)
            what.erase(0, bracket + 2);
        message_ = "invalid JSON at byte " + std::to_string(position) + ": " + what;
        return false;
    }

    [[nodiscard]] auto message() const -> const std::string& { return message_; }

private:
    std::string message_ = "invalid JSON";
};

auto describe_parse_error(std::string_view text) -> std::string {
    parse_error_recorder recorder;
    (void)json::sax_parse(text.begin(), text.end(), &recorder);
    return recorder.message();
}

/// What a value of the wrong type was, for "must be an integer (got "10")".
/// Scalars are shown as written; containers only by kind.
auto describe(const json& value) -> std::string {
    if (value.is_object()) return "an object";
    if (value.is_array()) return "an array";
    if (value.is_string() && value.get_ref<const std::string&>().size() > 32) return "a string";
    return value.dump();
}

constexpr std::array<std::string_view, 14> top_level_keys{"nodes",
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
constexpr std::array<std::string_view, 3> node_keys{"host", "port", "unix"};
constexpr std::array<std::string_view, 7> lock_keys{
    "ttl_ms", "min_validity_ms", "auto_renew", "renew_fraction", "fencing",
    "wait",   "waiter_ttl_ms"};
constexpr std::array<std::string_view, 3> retry_keys{"attempts", "delay_ms", "jitter_ms"};
constexpr std::array<std::string_view, 2> reconnect_keys{"min_delay_ms", "max_delay_ms"};
constexpr std::array<std::string_view, 2> auth_keys{"username", "password_env"};

/// Walks the parsed document. Every read_* returns false after recording the
/// first error; absent optional fields keep client_config's defaults.
class document_reader {
public:
    explicit document_reader(std::string_view source) : source_{source} {}

    auto read(const json& root) -> result<client_config, config_error> {
        client_config config;
        if (!read_root(root, config)) return failure{std::move(*error_)};
        if (auto problem = validate_config(config, source_)) return failure{std::move(*problem)};
        return config;
    }

private:
    auto fail(std::string field, std::string message) -> bool {
        if (!error_) error_ = config_error{source_, std::move(field), std::move(message)};
        return false;
    }

    /// The value must be an object holding only the listed keys.
    auto check_object(const json& value, const std::string& pointer,
                      std::span<const std::string_view> known) -> bool {
        if (!value.is_object())
            return fail(pointer, "must be an object (got " + describe(value) + ")");
        for (const auto& item : value.items()) {
            const std::string& key = item.key();
            if (std::ranges::find(known, key) != known.end()) continue;
            // A typo must not silently fall back to the default: "ttl_msec"
            // would otherwise leave the TTL at 10 s without a word.
            std::string message = "unknown field";
            std::string_view closest;
            std::size_t best = 3;  // suggest only close matches
            for (const std::string_view candidate : known) {
                // "ttl" for "ttl_ms": a missing unit suffix is a likely slip.
                const bool is_prefix = key.size() >= 3 && candidate.starts_with(key);
                const std::size_t distance = is_prefix ? 1 : edit_distance(key, candidate);
                if (distance < best) {
                    best = distance;
                    closest = candidate;
                }
            }
            if (!closest.empty()) message += " (did you mean \"" + std::string{closest} + "\"?)";
            return fail(child(pointer, key), std::move(message));
        }
        return true;
    }

    auto read_string(const json& object, std::string_view key, const std::string& pointer,
                     std::string& out, bool non_empty = false) -> bool {
        const auto it = object.find(key);
        if (it == object.end()) return true;
        const std::string field = child(pointer, key);
        if (!it->is_string()) return fail(field, "must be a string (got " + describe(*it) + ")");
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
        return fail(child(pointer, "wait"),
                    "must be one of \"targeted\", \"fair\", \"broadcast\", \"poll\" (got \"" +
                        text + "\")");
    }

    auto read_bool(const json& object, std::string_view key, const std::string& pointer, bool& out)
        -> bool {
        const auto it = object.find(key);
        if (it == object.end()) return true;
        if (!it->is_boolean())
            return fail(child(pointer, key), "must be a boolean (got " + describe(*it) + ")");
        out = it->get<bool>();
        return true;
    }

    auto read_number(const json& object, std::string_view key, const std::string& pointer,
                     double& out) -> bool {
        const auto it = object.find(key);
        if (it == object.end()) return true;
        if (!it->is_number())
            return fail(child(pointer, key), "must be a number (got " + describe(*it) + ")");
        out = it->get<double>();
        return true;
    }

    /// A JSON integer no larger than 2^31-1. Negative values are kept as they
    /// are (std::int64_t holds every one nlohmann can produce) for
    /// validate_config to reject with the rule of the field.
    auto read_integer(const json& value, const std::string& field, std::int64_t& out) -> bool {
        if (!value.is_number_integer())
            return fail(field, "must be an integer (got " + describe(value) + ")");
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
        if (!read_integer(*it, child(pointer, key), value)) return false;
        out = milliseconds{value};
        return true;
    }

    auto read_int(const json& object, std::string_view key, const std::string& pointer, int& out,
                  std::string_view below_int_message) -> bool {
        const auto it = object.find(key);
        if (it == object.end()) return true;
        const std::string field = child(pointer, key);
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
        if (has_unix) {
            if (value.contains("port"))
                return fail(child(pointer, "port"), "is only allowed with \"host\"");
            return read_string(value, "unix", pointer, out.unix_path, /*non_empty=*/true);
        }
        if (!read_string(value, "host", pointer, out.host, /*non_empty=*/true)) return false;
        if (const auto port = value.find("port"); port != value.end()) {
            const std::string field = child(pointer, "port");
            if (!port->is_number_integer())
                return fail(field, "must be an integer (got " + describe(*port) + ")");
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
        if (nodes == root.end()) return fail("/nodes", "is required");
        if (!nodes->is_array())
            return fail("/nodes", "must be an array (got " + describe(*nodes) + ")");
        // An empty array is left to validate_config.
        config.nodes.reserve(nodes->size());
        for (std::size_t i = 0; i < nodes->size(); ++i) {
            node_address node;
            if (!read_node((*nodes)[i], child("/nodes", i), node)) return false;
            config.nodes.push_back(std::move(node));
        }
        return true;
    }

    auto read_auth(const json& auth, client_config& config) -> bool {
        const std::string pointer = "/auth";
        if (!check_object(auth, pointer, auth_keys)) return false;
        if (!read_string(auth, "username", pointer, config.username)) return false;
        const std::string field = "/auth/password_env";
        if (!auth.contains("password_env")) return fail(field, "is required");
        if (!read_string(auth, "password_env", pointer, config.password_env, /*non_empty=*/true))
            return false;
        const std::string& name = config.password_env;
        // getenv would silently read a shorter name at an embedded NUL.
        if (name.find_first_of(std::string_view{"=\0", 2}) != std::string::npos)
            return fail(field, "must be an environment variable name (no '=' or NUL)");
        // Messages name the variable, never its value.
        const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe)
        if (value == nullptr) return fail(field, "environment variable " + name + " is not set");
        if (*value == '\0') return fail(field, "environment variable " + name + " is empty");
        config.password = secret{value};
        return true;
    }

    auto read_root(const json& root, client_config& config) -> bool {
        if (!root.is_object()) return fail("", "the document must be a JSON object");
        if (!check_object(root, "", top_level_keys)) return false;
        if (!read_nodes(root, config)) return false;
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
            if (!(check_object(*lock, p, lock_keys) && read_ms(*lock, "ttl_ms", p, l.ttl) &&
                  read_ms(*lock, "min_validity_ms", p, l.min_validity) &&
                  read_bool(*lock, "auto_renew", p, l.auto_renew) &&
                  read_number(*lock, "renew_fraction", p, l.renew_fraction) &&
                  read_bool(*lock, "fencing", p, l.fencing) &&
                  read_ms(*lock, "waiter_ttl_ms", p, l.waiter_ttl) &&
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
            if (!read_auth(*auth, config)) return false;
        }
        return true;
    }

    std::string source_;
    std::optional<config_error> error_;
};

auto parse_config_impl(std::string_view json_text, std::string_view source)
    -> result<client_config, config_error> {
    duplicate_key_finder duplicates;
    // parse() copies the callback into a std::function; keep the state here.
    const json root = json::parse(
        json_text.begin(), json_text.end(),
        [&duplicates](int depth, json::parse_event_t event, json& parsed) {
            return duplicates(depth, event, parsed);
        },
        /*allow_exceptions=*/false);
    if (root.is_discarded())
        return failure{config_error{std::string{source}, "", describe_parse_error(json_text)}};
    if (const auto& duplicate = duplicates.first_duplicate())
        return failure{config_error{std::string{source}, *duplicate, "duplicate field"}};
    return document_reader{source}.read(root);
}

}  // namespace

auto parse_config(std::string_view json_text, std::string_view source)
    -> result<client_config, config_error> {
    try {
        return parse_config_impl(json_text, source);
    } catch (const std::exception& e) {
        return failure{
            config_error{std::string{source}, "", std::string{"internal error: "} + e.what()}};
    } catch (...) {
        return failure{config_error{std::string{source}, "", "internal error"}};
    }
}

auto load_config(const std::filesystem::path& file) -> result<client_config, config_error> {
    std::string name;
    try {
        name = file.string();
        const auto close = [](std::FILE* f) { (void)std::fclose(f); };
        const std::unique_ptr<std::FILE, decltype(close)> stream{std::fopen(name.c_str(), "rb"),
                                                                 close};
        if (!stream) {
            const int err = errno;
            return failure{
                config_error{name, "", "cannot open: " + std::generic_category().message(err)}};
        }
        std::string text;
        std::array<char, 4096> buffer{};
        while (true) {
            const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), stream.get());
            text.append(buffer.data(), n);
            if (text.size() > max_file_size)
                return failure{config_error{name, "", "cannot read: larger than 16 MiB"}};
            if (n < buffer.size()) break;
        }
        if (std::ferror(stream.get()) != 0) {
            const int err = errno;
            return failure{
                config_error{name, "", "cannot read: " + std::generic_category().message(err)}};
        }
        return parse_config(text, name);
    } catch (const std::exception& e) {
        return failure{config_error{name, "", std::string{"internal error: "} + e.what()}};
    } catch (...) {
        return failure{config_error{name, "", "internal error"}};
    }
}

}  // namespace redlock
