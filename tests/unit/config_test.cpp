// Configuration: parse_config / load_config / validate_config. Every error case
// checks the file and the JSON pointer of the field, not only that parsing failed.

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <redlock/config.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace {

using nlohmann::json;
using redlock::client_config;
using redlock::config_error;
using std::chrono::milliseconds;

constexpr std::string_view source = "test.json";

/// A smallest valid document: one node, everything else defaulted.
auto minimal() -> json {
    return json::parse(R"({"nodes": [{"host": "127.0.0.1", "port": 7001}]})");
}

auto parse_ok(const std::string& text) -> client_config {
    auto parsed = redlock::parse_config(text, source);
    if (!parsed) FAIL("unexpected error: ", parsed.error().what());
    return std::move(parsed).value();
}

/// For messages: doctest evaluates them even on success when run with -s, so
/// the error must only be touched when there is one.
auto error_text(const redlock::result<client_config, config_error>& parsed) -> std::string {
    return parsed ? std::string{"ok"} : parsed.error().what();
}

auto parse_error(const std::string& text) -> config_error {
    auto parsed = redlock::parse_config(text, source);
    REQUIRE_MESSAGE(!parsed.has_value(), "accepted: ", text);
    return parsed.error();
}

/// `doc` with the value at `pointer` replaced (or created).
auto with(json doc, std::string_view pointer, json value) -> json {
    doc[json::json_pointer{std::string{pointer}}] = std::move(value);
    return doc;
}

/// A variable set for the lifetime of the guard; the name is unique to this file.
class env_guard {
public:
    env_guard(const char* name, const char* value) : name_{name} {
        REQUIRE(::setenv(name, value, 1) == 0);
    }
    env_guard(const env_guard&) = delete;
    auto operator=(const env_guard&) -> env_guard& = delete;
    ~env_guard() { ::unsetenv(name_); }

private:
    const char* name_;
};

constexpr const char* password_var = "REDLOCK_CONFIG_TEST_PASSWORD_5d81c";
constexpr const char* password_value = "pw-Zq8!never-printed-41";

auto unique_temp_path(std::string_view stem) -> std::filesystem::path {
    static int counter = 0;
    return std::filesystem::temp_directory_path() /
           (std::string{stem} + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) +
            ".json");
}

auto write_file(const std::filesystem::path& path, std::string_view text) -> void {
    std::ofstream out{path, std::ios::binary};
    out << text;
    REQUIRE(out.good());
}

struct error_case {
    const char* name;
    json document;
    const char* field;
    const char* fragment;  ///< must occur in the message
};

auto check_cases(const std::vector<error_case>& cases) -> void {
    for (const auto& c : cases) {
        const std::string name = c.name;
        CAPTURE(name);
        const std::string text = c.document.dump();
        CAPTURE(text);
        const config_error error = parse_error(text);
        CHECK(error.file == source);
        CHECK(error.field == c.field);
        CHECK_MESSAGE(error.message.find(c.fragment) != std::string::npos, error.message);
    }
}

}  // namespace

TEST_CASE("config: node_address::to_string") {
    CHECK(redlock::node_address{"127.0.0.1", 7001, ""}.to_string() == "127.0.0.1:7001");
    CHECK(redlock::node_address{"redis.example", 6379, ""}.to_string() == "redis.example:6379");
    CHECK(redlock::node_address{"", 6379, "/run/redis.sock"}.to_string() == "unix:/run/redis.sock");
    CHECK(redlock::node_address{"::1", 7001, ""}.to_string() == "[::1]:7001");
}

TEST_CASE("config: config_error::what") {
    CHECK(
        config_error{"configs/x.json", "/nodes/1/port", "must be an integer in 1..65535"}.what() ==
        "configs/x.json: /nodes/1/port: must be an integer in 1..65535");
    CHECK(config_error{"configs/x.json", "", "invalid JSON"}.what() ==
          "configs/x.json: invalid JSON");
}

TEST_CASE("config: defaults of a minimal document") {
    const client_config config = parse_ok(minimal().dump());
    const client_config defaults;
    REQUIRE(config.nodes.size() == 1);
    CHECK(config.nodes[0].host == "127.0.0.1");
    CHECK(config.nodes[0].port == 7001);
    CHECK(config.nodes[0].unix_path.empty());

    CHECK(config.key_prefix == "redlock:");
    CHECK(config.connect_timeout == milliseconds{200});
    CHECK(config.request_timeout == milliseconds{50});
    CHECK(config.max_concurrent_acquisitions == 256);
    CHECK(config.clock_drift_factor == doctest::Approx(0.01));
    CHECK(config.clock_drift_floor == milliseconds{2});
    CHECK(config.lock.ttl == milliseconds{10'000});
    CHECK(config.lock.min_validity == milliseconds{1});
    CHECK_FALSE(config.lock.auto_renew);
    CHECK(config.lock.renew_fraction == doctest::Approx(1.0 / 3.0));
    CHECK_FALSE(config.lock.fencing);
    CHECK(config.retry.attempts == 3);
    CHECK(config.retry.delay == milliseconds{200});
    CHECK(config.retry.jitter == milliseconds{100});
    CHECK(config.reconnect.min_delay == milliseconds{50});
    CHECK(config.reconnect.max_delay == milliseconds{2000});
    CHECK(config.username.empty());
    CHECK(config.password_env.empty());
    CHECK(config.password.empty());

    // The documented defaults are client_config's own.
    CHECK(config.key_prefix == defaults.key_prefix);
    CHECK(config.connect_timeout == defaults.connect_timeout);
    CHECK(config.request_timeout == defaults.request_timeout);
    CHECK(config.clock_drift_factor == defaults.clock_drift_factor);
    CHECK(config.lock.ttl == defaults.lock.ttl);
    CHECK(config.retry.attempts == defaults.retry.attempts);
    CHECK(config.reconnect.max_delay == defaults.reconnect.max_delay);
}

TEST_CASE("config: max_concurrent_acquisitions is read, 0 means no limit, negative is refused") {
    CHECK(parse_ok(with(minimal(), "/max_concurrent_acquisitions", 1024).dump())
              .max_concurrent_acquisitions == 1024);
    CHECK(parse_ok(with(minimal(), "/max_concurrent_acquisitions", 0).dump())
              .max_concurrent_acquisitions == 0);
    const auto negative = parse_error(with(minimal(), "/max_concurrent_acquisitions", -1).dump());
    CHECK(std::string{negative.what()}.find("/max_concurrent_acquisitions") != std::string::npos);
    const auto text = parse_error(with(minimal(), "/max_concurrent_acquisitions", "many").dump());
    CHECK(std::string{text.what()}.find("must be an integer") != std::string::npos);
}

TEST_CASE("config: default port, empty objects and empty key prefix") {
    const client_config config =
        parse_ok(R"({"nodes": [{"host": "redis-a"}], "key_prefix": "", "lock": {}, "retry": {},
                     "reconnect": {}})");
    REQUIRE(config.nodes.size() == 1);
    CHECK(config.nodes[0].port == 6379);
    CHECK(config.key_prefix.empty());
    CHECK(config.lock.ttl == milliseconds{10'000});
}

TEST_CASE("config: a full valid document") {
    const env_guard env{password_var, password_value};
    const std::string text = std::string{R"({
        "nodes": [
            {"host": "10.0.0.1", "port": 7001},
            {"host": "10.0.0.2", "port": 65535},
            {"host": "redis-3.internal"},
            {"host": "::1", "port": 1},
            {"unix": "/run/redis/redis-5.sock"}
        ],
        "key_prefix": "app:locks:",
        "connect_timeout_ms": 300,
        "request_timeout_ms": 40,
        "clock_drift_factor": 0,
        "clock_drift_floor_ms": 0,
        "lock": {"ttl_ms": 30000, "min_validity_ms": 500, "auto_renew": true,
                 "renew_fraction": 0.5, "fencing": true},
        "retry": {"attempts": 1, "delay_ms": 150, "jitter_ms": 0},
        "reconnect": {"min_delay_ms": 2147483647, "max_delay_ms": 2147483647},
        "auth": {"username": "locker", "password_env": ")"} +
                             password_var + R"("}
    })";
    const client_config config = parse_ok(text);
    REQUIRE(config.nodes.size() == 5);
    CHECK(config.nodes[0].to_string() == "10.0.0.1:7001");
    CHECK(config.nodes[1].to_string() == "10.0.0.2:65535");
    CHECK(config.nodes[2].to_string() == "redis-3.internal:6379");
    CHECK(config.nodes[3].to_string() == "[::1]:1");
    CHECK(config.nodes[4].is_unix());
    CHECK(config.nodes[4].host.empty());
    CHECK(config.nodes[4].to_string() == "unix:/run/redis/redis-5.sock");
    CHECK(config.key_prefix == "app:locks:");
    CHECK(config.connect_timeout == milliseconds{300});
    CHECK(config.request_timeout == milliseconds{40});
    CHECK(config.clock_drift_factor == 0.0);
    CHECK(config.clock_drift_floor == milliseconds{0});
    CHECK(config.lock.ttl == milliseconds{30'000});
    CHECK(config.lock.min_validity == milliseconds{500});
    CHECK(config.lock.auto_renew);
    CHECK(config.lock.renew_fraction == 0.5);
    CHECK(config.lock.fencing);
    CHECK(config.retry.attempts == 1);
    CHECK(config.retry.delay == milliseconds{150});
    CHECK(config.retry.jitter == milliseconds{0});
    CHECK(config.reconnect.min_delay == milliseconds{2147483647});
    CHECK(config.reconnect.max_delay == milliseconds{2147483647});
    CHECK(config.username == "locker");
    CHECK(config.password_env == password_var);
    CHECK(config.password.reveal() == password_value);
}

TEST_CASE("config: invalid JSON names the byte and no field") {
    struct bad_text {
        const char* text;
        const char* position;
    };
    const std::vector<bad_text> cases{
        {"", "byte 1"},
        {"{", "byte 2"},
        {R"({"nodes": x})", "byte 11"},
        {R"({"nodes": [],})", "byte 14"},
        {R"({"nodes": []} trailing)", "byte 17"},
        {"{\n  // a comment\n  \"nodes\": []\n}", "byte 5"},
        {R"({"nodes": [{"host": "a", "port": 1e400}]})", "byte"},
        {"{\"key_prefix\": \"\xff\"}", "byte"},
    };
    for (const auto& c : cases) {
        const std::string text = c.text;
        CAPTURE(text);
        const config_error error = parse_error(c.text);
        CHECK(error.file == source);
        CHECK(error.field.empty());
        CHECK_MESSAGE(error.message.starts_with("invalid JSON"), error.message);
        CHECK_MESSAGE(error.message.find(c.position) != std::string::npos, error.message);
        CHECK(error.what().starts_with("test.json: invalid JSON"));
    }
}

TEST_CASE("config: deeply nested input is rejected without exhausting the stack") {
    const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
    CHECK(parse_error(R"({"nodes": [{"host": "a"}], "x": )" + deep + "}").field == "/x");
    CHECK(parse_error(std::string(100'000, '[')).message.starts_with("invalid JSON"));
}

TEST_CASE("config: the document must be an object") {
    for (const std::string text : {"[]", "42", "null", "\"nodes\"", "true"}) {
        CAPTURE(text);
        const config_error error = parse_error(text);
        CHECK(error.field.empty());
        CHECK(error.message.find("must be a JSON object") != std::string::npos);
    }
}

TEST_CASE("config: unknown fields are errors at every level") {
    check_cases({
        {"top level", with(minimal(), "/nodse", 1), "/nodse", "unknown field"},
        {"suggestion", with(minimal(), "/retry/atempts", 3), "/retry/atempts",
         "unknown field (did you mean \"attempts\"?)"},
        {"lock", with(minimal(), "/lock/ttl", 100), "/lock/ttl", "did you mean \"ttl_ms\""},
        {"lock watchdog", with(minimal(), "/lock/watchdog", true), "/lock/watchdog",
         "unknown field"},
        {"reconnect", with(minimal(), "/reconnect/max_delay", 1), "/reconnect/max_delay",
         "unknown field"},
        {"auth password", with(minimal(), "/auth", json{{"password", "x"}, {"password_env", "X"}}),
         "/auth/password", "unknown field"},
        {"node", with(minimal(), "/nodes/0/hots", "a"), "/nodes/0/hots", "did you mean \"host\""},
        {"node db", with(minimal(), "/nodes/0/db", 0), "/nodes/0/db", "unknown field"},
        {"escaped slash", with(minimal(), "/a~1b", 1), "/a~1b", "unknown field"},
        {"escaped tilde", with(minimal(), "/a~0b", 1), "/a~0b", "unknown field"},
        {"no suggestion", with(minimal(), "/watchdog", 1), "/watchdog", "unknown field"},
        {"missing unit", with(minimal(), "/reconnect/max_delay", 1), "/reconnect/max_delay",
         "did you mean \"max_delay_ms\""},
        {"misspelt unit", with(minimal(), "/lock/ttl_msec", 1), "/lock/ttl_msec",
         "did you mean \"ttl_ms\""},
    });
    const config_error error = parse_error(with(minimal(), "/watchdog", 1).dump());
    CHECK(error.message == "unknown field");
}

TEST_CASE("config: duplicate keys are errors") {
    CHECK(parse_error(R"({"nodes": [{"host": "a"}], "nodes": [{"host": "b"}]})").field == "/nodes");
    CHECK(parse_error(R"({"nodes": [{"host": "a"}], "lock": {"ttl_ms": 1, "ttl_ms": 20000}})")
              .field == "/lock/ttl_ms");
    const config_error error =
        parse_error(R"({"nodes": [{"host": "a"}, {"host": "b", "port": 1, "port": 2}]})");
    CHECK(error.field == "/nodes/1/port");
    CHECK(error.message == "duplicate field");
    CHECK(error.file == source);
    // The pointer counts array elements and escapes '/' and '~' in keys.
    CHECK(parse_error(R"({"nodes": [{"host": "a"}], "x": [1, {"a/b~": [0, {"q": 1, "q": 1}]}]})")
              .field == "/x/1/a~1b~0/1/q");
    // Equal keys in different objects are fine.
    CHECK(parse_ok(R"({"nodes": [{"host": "a", "port": 1}, {"host": "b", "port": 1}]})")
              .nodes.size() == 2);
}

TEST_CASE("config: nodes") {
    const json node = {{"host", "127.0.0.1"}, {"port", 7001}};
    check_cases({
        {"missing", json::object(), "/nodes", "is required"},
        {"missing with others", json{{"key_prefix", "x"}}, "/nodes", "is required"},
        {"not an array", json{{"nodes", node}}, "/nodes", "must be an array"},
        {"empty", json{{"nodes", json::array()}}, "/nodes", "must contain at least one node"},
        {"element not an object", json{{"nodes", {node, "127.0.0.1:7002"}}}, "/nodes/1",
         "must be an object"},
        {"both host and unix", json{{"nodes", {node, {{"host", "h"}, {"unix", "/tmp/r.sock"}}}}},
         "/nodes/1", "not both"},
        {"neither", json{{"nodes", {node, {{"port", 7002}}}}}, "/nodes/1",
         "must have either \"host\" or \"unix\""},
        {"empty object", json{{"nodes", {json::object()}}}, "/nodes/0", "must have either"},
        {"host not a string", with(minimal(), "/nodes/0/host", 127), "/nodes/0/host",
         "must be a string"},
        {"host null", with(minimal(), "/nodes/0/host", nullptr), "/nodes/0/host",
         "must be a string"},
        {"host empty", with(minimal(), "/nodes/0/host", ""), "/nodes/0/host", "must not be empty"},
        {"port string", with(minimal(), "/nodes/0/port", "7001"), "/nodes/0/port",
         "must be an integer"},
        {"port float", with(minimal(), "/nodes/0/port", 7001.5), "/nodes/0/port",
         "must be an integer"},
        {"port float integral", with(minimal(), "/nodes/0/port", 7001.0), "/nodes/0/port",
         "must be an integer"},
        {"port bool", with(minimal(), "/nodes/0/port", true), "/nodes/0/port",
         "must be an integer"},
        {"port zero", with(minimal(), "/nodes/0/port", 0), "/nodes/0/port",
         "must be an integer in 1..65535 (got 0)"},
        {"port negative", with(minimal(), "/nodes/0/port", -1), "/nodes/0/port",
         "must be an integer in 1..65535 (got -1)"},
        {"port too large", with(minimal(), "/nodes/0/port", 65536), "/nodes/0/port",
         "must be an integer in 1..65535 (got 65536)"},
        {"port huge", with(minimal(), "/nodes/0/port", std::numeric_limits<std::uint64_t>::max()),
         "/nodes/0/port", "must be an integer in 1..65535"},
        {"unix not a string", json{{"nodes", {node, {{"unix", 5}}}}}, "/nodes/1/unix",
         "must be a string"},
        {"unix empty", json{{"nodes", {node, {{"unix", ""}}}}}, "/nodes/1/unix",
         "must not be empty"},
        {"unix relative", json{{"nodes", {node, {{"unix", "run/redis.sock"}}}}}, "/nodes/1/unix",
         "must be an absolute path (got \"run/redis.sock\")"},
        {"unix too long", json{{"nodes", {node, {{"unix", "/" + std::string(200, 's')}}}}},
         "/nodes/1/unix", "bytes long"},
        {"unix with port", json{{"nodes", {node, {{"unix", "/tmp/r.sock"}, {"port", 1}}}}},
         "/nodes/1/port", "only allowed with \"host\""},
    });
}

TEST_CASE("config: duplicate nodes name the second one") {
    const json a = {{"host", "10.0.0.1"}, {"port", 7001}};
    const json b = {{"host", "10.0.0.2"}, {"port", 7001}};
    const json c = {{"host", "10.0.0.1"}, {"port", 7002}};
    check_cases({
        {"same host:port", json{{"nodes", {a, b, c, a}}}, "/nodes/3",
         "duplicate of /nodes/0 (10.0.0.1:7001)"},
        {"default port spelled out",
         json{{"nodes", {{{"host", "h"}}, {{"host", "h"}, {"port", 6379}}}}}, "/nodes/1",
         "duplicate of /nodes/0"},
        {"host case", json{{"nodes", {{{"host", "Redis-A"}}, {{"host", "redis-a"}}}}}, "/nodes/1",
         "duplicate of /nodes/0"},
        {"same unix path",
         json{{"nodes", {a, {{"unix", "/tmp/r.sock"}}, b, {{"unix", "/tmp/r.sock"}}}}}, "/nodes/3",
         "duplicate of /nodes/1 (unix:/tmp/r.sock)"},
    });
    // Same port, different hosts; same host, different ports: distinct nodes.
    CHECK(parse_ok(json{{"nodes", {a, b, c}}}.dump()).nodes.size() == 3);
}

TEST_CASE("config: integer millisecond fields") {
    struct field_rule {
        const char* pointer;
        bool zero_allowed;
    };
    const std::vector<field_rule> fields{
        {"/connect_timeout_ms", false},     {"/request_timeout_ms", false},
        {"/clock_drift_floor_ms", true},    {"/lock/ttl_ms", false},
        {"/lock/min_validity_ms", false},   {"/retry/delay_ms", false},
        {"/retry/jitter_ms", true},         {"/reconnect/min_delay_ms", false},
        {"/reconnect/max_delay_ms", false},
    };
    for (const auto& f : fields) {
        const std::string pointer = f.pointer;
        CAPTURE(pointer);
        std::vector<error_case> cases{
            {"string", with(minimal(), f.pointer, "100"), f.pointer, "must be an integer"},
            {"float", with(minimal(), f.pointer, 100.5), f.pointer, "must be an integer"},
            {"integral float", with(minimal(), f.pointer, 100.0), f.pointer, "must be an integer"},
            {"exponent", with(minimal(), f.pointer, 1e3), f.pointer, "must be an integer"},
            {"bool", with(minimal(), f.pointer, true), f.pointer, "must be an integer"},
            {"null", with(minimal(), f.pointer, nullptr), f.pointer, "must be an integer"},
            {"array", with(minimal(), f.pointer, json::array({1})), f.pointer,
             "must be an integer"},
            {"above int32", with(minimal(), f.pointer, 2147483648LL), f.pointer,
             "must be at most 2147483647 (got 2147483648)"},
            {"uint64 max", with(minimal(), f.pointer, std::numeric_limits<std::uint64_t>::max()),
             f.pointer, "must be at most 2147483647 (got 18446744073709551615)"},
        };
        if (f.zero_allowed) {
            cases.push_back({"negative", with(minimal(), f.pointer, -1), f.pointer,
                             "must be at least 0 (got -1)"});
            cases.push_back({"int64 min",
                             with(minimal(), f.pointer, std::numeric_limits<std::int64_t>::min()),
                             f.pointer, "must be at least 0 (got -9223372036854775808)"});
        } else {
            cases.push_back({"zero", with(minimal(), f.pointer, 0), f.pointer,
                             "must be greater than 0 (got 0)"});
            cases.push_back({"negative", with(minimal(), f.pointer, -5), f.pointer,
                             "must be greater than 0 (got -5)"});
            cases.push_back({"below int32", with(minimal(), f.pointer, -3'000'000'000LL), f.pointer,
                             "must be greater than 0 (got -3000000000)"});
        }
        check_cases(cases);
    }
    // Zero where it is allowed.
    const client_config config =
        parse_ok(with(with(minimal(), "/clock_drift_floor_ms", 0), "/retry/jitter_ms", 0).dump());
    CHECK(config.clock_drift_floor == milliseconds{0});
    CHECK(config.retry.jitter == milliseconds{0});
}

TEST_CASE("config: other scalar fields") {
    check_cases({
        {"key_prefix number", with(minimal(), "/key_prefix", 1), "/key_prefix", "must be a string"},
        {"key_prefix null", with(minimal(), "/key_prefix", nullptr), "/key_prefix",
         "must be a string"},
        {"drift string", with(minimal(), "/clock_drift_factor", "0.01"), "/clock_drift_factor",
         "must be a number"},
        {"drift bool", with(minimal(), "/clock_drift_factor", false), "/clock_drift_factor",
         "must be a number"},
        {"drift negative", with(minimal(), "/clock_drift_factor", -0.01), "/clock_drift_factor",
         "must be at least 0 and less than 0.5 (got -0.01)"},
        {"drift half", with(minimal(), "/clock_drift_factor", 0.5), "/clock_drift_factor",
         "(got 0.5)"},
        {"drift one", with(minimal(), "/clock_drift_factor", 1), "/clock_drift_factor", "(got 1)"},
        {"renew string", with(minimal(), "/lock/renew_fraction", "1/3"), "/lock/renew_fraction",
         "must be a number"},
        {"renew zero", with(minimal(), "/lock/renew_fraction", 0), "/lock/renew_fraction",
         "must be greater than 0 and less than 1 (got 0)"},
        {"renew one", with(minimal(), "/lock/renew_fraction", 1.0), "/lock/renew_fraction",
         "(got 1)"},
        {"renew negative", with(minimal(), "/lock/renew_fraction", -0.5), "/lock/renew_fraction",
         "(got -0.5)"},
        {"auto_renew string", with(minimal(), "/lock/auto_renew", "true"), "/lock/auto_renew",
         "must be a boolean"},
        {"auto_renew number", with(minimal(), "/lock/auto_renew", 1), "/lock/auto_renew",
         "must be a boolean"},
        {"fencing null", with(minimal(), "/lock/fencing", nullptr), "/lock/fencing",
         "must be a boolean"},
        {"attempts zero", with(minimal(), "/retry/attempts", 0), "/retry/attempts",
         "must be at least 1 (got 0)"},
        {"attempts negative", with(minimal(), "/retry/attempts", -1), "/retry/attempts",
         "must be at least 1 (got -1)"},
        {"attempts below int", with(minimal(), "/retry/attempts", -3'000'000'000LL),
         "/retry/attempts", "must be at least 1 (got -3000000000)"},
        {"attempts above int32", with(minimal(), "/retry/attempts", 2147483648LL),
         "/retry/attempts", "must be at most 2147483647"},
        {"attempts float", with(minimal(), "/retry/attempts", 2.5), "/retry/attempts",
         "must be an integer"},
        {"attempts string", with(minimal(), "/retry/attempts", "3"), "/retry/attempts",
         "must be an integer"},
    });
    // An integer is a number too; the integral boundaries are accepted.
    const client_config config = parse_ok(
        with(with(minimal(), "/clock_drift_factor", 0), "/lock/renew_fraction", 0.999).dump());
    CHECK(config.clock_drift_factor == 0.0);
    CHECK(config.lock.renew_fraction == doctest::Approx(0.999));
    CHECK(parse_ok(with(minimal(), "/retry/attempts", 2147483647).dump()).retry.attempts ==
          2147483647);
}

TEST_CASE("config: sections must be objects") {
    check_cases({
        {"lock", with(minimal(), "/lock", 10000), "/lock", "must be an object"},
        {"lock array", with(minimal(), "/lock", json::array()), "/lock", "must be an object"},
        {"retry", with(minimal(), "/retry", 3), "/retry", "must be an object"},
        {"reconnect", with(minimal(), "/reconnect", nullptr), "/reconnect", "must be an object"},
        {"auth", with(minimal(), "/auth", "REDLOCK_PASSWORD"), "/auth", "must be an object"},
    });
}

TEST_CASE("config: cross-field rules") {
    check_cases({
        {"request timeout equal to ttl",
         with(with(minimal(), "/lock/ttl_ms", 100), "/request_timeout_ms", 100),
         "/request_timeout_ms", "must be less than /lock/ttl_ms (100) (got 100)"},
        {"request timeout above ttl", with(minimal(), "/request_timeout_ms", 20000),
         "/request_timeout_ms", "must be less than /lock/ttl_ms (10000) (got 20000)"},
        {"min validity equal to ttl",
         with(with(minimal(), "/lock/ttl_ms", 100), "/lock/min_validity_ms", 100),
         "/lock/min_validity_ms", "must be less than /lock/ttl_ms (100) (got 100)"},
        {"ttl that drift alone uses up",
         with(with(minimal(), "/lock/ttl_ms", 4), "/request_timeout_ms", 1), "/lock/ttl_ms",
         "leaves no validity: clock drift (3 ms) plus /lock/min_validity_ms (1 ms) must be less "
         "than it (got 4)"},
        {"min validity that drift pushes past the ttl",
         with(with(minimal(), "/lock/ttl_ms", 100), "/lock/min_validity_ms", 97), "/lock/ttl_ms",
         "leaves no validity"},
        {"max delay below min delay",
         with(with(minimal(), "/reconnect/min_delay_ms", 100), "/reconnect/max_delay_ms", 99),
         "/reconnect/max_delay_ms", "must be at least /reconnect/min_delay_ms (100) (got 99)"},
        {"max delay below default min delay", with(minimal(), "/reconnect/max_delay_ms", 10),
         "/reconnect/max_delay_ms", "must be at least /reconnect/min_delay_ms (50)"},
    });
    // A field out of range is reported as itself, not through a cross-field rule.
    CHECK(parse_error(with(minimal(), "/lock/ttl_ms", 0).dump()).field == "/lock/ttl_ms");
    // Equal reconnect delays are fine; so are timeouts just below the TTL.
    const client_config config =
        parse_ok(json::parse(R"({"nodes": [{"host": "h"}], "request_timeout_ms": 99,
                        "lock": {"ttl_ms": 100, "min_validity_ms": 96},
                        "reconnect": {"min_delay_ms": 70, "max_delay_ms": 70}})")
                     .dump());
    CHECK(config.reconnect.max_delay == milliseconds{70});
}

TEST_CASE("config: the password comes from the environment") {
    const std::string auth_doc =
        with(minimal(), "/auth", json{{"password_env", password_var}}).dump();

    SUBCASE("set") {
        const env_guard env{password_var, password_value};
        const client_config config = parse_ok(auth_doc);
        CHECK(config.password.reveal() == password_value);
        CHECK(config.password_env == password_var);
        CHECK(config.username.empty());
    }
    SUBCASE("unset") {
        ::unsetenv(password_var);
        const config_error error = parse_error(auth_doc);
        CHECK(error.file == source);
        CHECK(error.field == "/auth/password_env");
        CHECK(error.message.find(password_var) != std::string::npos);
        CHECK(error.message.find("not set") != std::string::npos);
    }
    SUBCASE("empty counts as unset") {
        const env_guard env{password_var, ""};
        const config_error error = parse_error(auth_doc);
        CHECK(error.field == "/auth/password_env");
        CHECK(error.message.find(password_var) != std::string::npos);
        CHECK(error.message.find("empty") != std::string::npos);
    }
    SUBCASE("auth errors") {
        const env_guard env{password_var, password_value};
        check_cases({
            {"password_env missing", with(minimal(), "/auth", json{{"username", "u"}}),
             "/auth/password_env", "is required"},
            {"empty auth", with(minimal(), "/auth", json::object()), "/auth/password_env",
             "is required"},
            {"password_env empty", with(minimal(), "/auth", json{{"password_env", ""}}),
             "/auth/password_env", "must not be empty"},
            {"password_env number", with(minimal(), "/auth", json{{"password_env", 1}}),
             "/auth/password_env", "must be a string"},
            {"password_env with =",
             with(minimal(), "/auth", json{{"password_env", std::string{password_var} + "=x"}}),
             "/auth/password_env", "environment variable name"},
            {"password_env with NUL",
             with(minimal(), "/auth", json{{"password_env", std::string{password_var} + '\0'}}),
             "/auth/password_env", "environment variable name"},
            {"username number",
             with(minimal(), "/auth", json{{"username", 7}, {"password_env", password_var}}),
             "/auth/username", "must be a string"},
        });
        const client_config config = parse_ok(
            with(minimal(), "/auth", json{{"username", "locker"}, {"password_env", password_var}})
                .dump());
        CHECK(config.username == "locker");
        CHECK(config.password.reveal() == password_value);
    }
}

TEST_CASE("config: the password never appears in an error message") {
    const env_guard env{password_var, password_value};
    const json with_auth =
        with(minimal(), "/auth", json{{"username", "locker"}, {"password_env", password_var}});
    // Errors found after the password was read: validation and cross-field rules.
    const std::vector<json> documents{
        with(with_auth, "/request_timeout_ms", 20000),
        with(with_auth, "/lock/ttl_ms", 0),
        with(with_auth, "/nodes/1", json{{"host", "127.0.0.1"}, {"port", 7001}}),
        with(with_auth, "/nodes", json::array()),
        with(with_auth, "/reconnect/max_delay_ms", 1),
    };
    for (const auto& doc : documents) {
        const config_error error = parse_error(doc.dump());
        CAPTURE(error.what());
        CHECK(error.what().find(password_value) == std::string::npos);
        CHECK(error.message.find(password_value) == std::string::npos);
    }
    // Nor in validate_config's messages about a code-built configuration.
    client_config config;
    config.username = "locker";
    config.password = redlock::secret{password_value};
    config.nodes.push_back({"h", 0, ""});
    const auto error = redlock::validate_config(config);
    REQUIRE(error.has_value());
    CHECK(error->what().find(password_value) == std::string::npos);
}

TEST_CASE("config: load_config reads a file and names it in errors") {
    SUBCASE("valid file") {
        const auto path = unique_temp_path("redlock-config-ok");
        write_file(path, R"({"nodes": [{"host": "127.0.0.1", "port": 7001}], "key_prefix": "t:"})");
        const auto loaded = redlock::load_config(path);
        std::filesystem::remove(path);
        REQUIRE_MESSAGE(loaded.has_value(), error_text(loaded));
        CHECK(loaded->key_prefix == "t:");
        CHECK(loaded->nodes.at(0).port == 7001);
    }
    SUBCASE("invalid field") {
        const auto path = unique_temp_path("redlock-config-bad");
        write_file(path, R"({"nodes": [{"host": "127.0.0.1", "port": 70001}]})");
        const auto loaded = redlock::load_config(path);
        std::filesystem::remove(path);
        REQUIRE_FALSE(loaded.has_value());
        CHECK(loaded.error().file == path.string());
        CHECK(loaded.error().field == "/nodes/0/port");
        CHECK(loaded.error().what() ==
              path.string() + ": /nodes/0/port: must be an integer in 1..65535 (got 70001)");
    }
    SUBCASE("invalid JSON") {
        const auto path = unique_temp_path("redlock-config-syntax");
        write_file(path, "{\"nodes\": [\n");
        const auto loaded = redlock::load_config(path);
        std::filesystem::remove(path);
        REQUIRE_FALSE(loaded.has_value());
        CHECK(loaded.error().file == path.string());
        CHECK(loaded.error().field.empty());
        CHECK(loaded.error().message.find("byte") != std::string::npos);
    }
    SUBCASE("missing file") {
        const auto path = unique_temp_path("redlock-config-missing");
        const auto loaded = redlock::load_config(path);
        REQUIRE_FALSE(loaded.has_value());
        CHECK(loaded.error().file == path.string());
        CHECK(loaded.error().field.empty());
        CHECK(loaded.error().message.find(std::generic_category().message(ENOENT)) !=
              std::string::npos);
        CHECK(loaded.error().what().starts_with(path.string() + ": "));
    }
    SUBCASE("a directory") {
        const auto loaded = redlock::load_config(std::filesystem::temp_directory_path());
        REQUIRE_FALSE(loaded.has_value());
        CHECK(loaded.error().file == std::filesystem::temp_directory_path().string());
        CHECK(loaded.error().message.find(std::generic_category().message(EISDIR)) !=
              std::string::npos);
    }
    SUBCASE("empty file") {
        const auto path = unique_temp_path("redlock-config-empty");
        write_file(path, "");
        const auto loaded = redlock::load_config(path);
        std::filesystem::remove(path);
        REQUIRE_FALSE(loaded.has_value());
        CHECK(loaded.error().message.starts_with("invalid JSON"));
    }
}

TEST_CASE("config: the shipped configuration files are valid") {
    // __FILE__ is tests/unit/config_test.cpp inside the source tree.
    const auto configs =
        std::filesystem::path{__FILE__}.parent_path().parent_path().parent_path() / "configs";
    if (!std::filesystem::exists(configs / "local.json")) {
        MESSAGE("configs/ not found next to the sources; skipped");
        return;
    }
    for (const std::string name : {"local.json", "docker.json"}) {
        CAPTURE(name);
        const auto loaded = redlock::load_config(configs / name);
        REQUIRE_MESSAGE(loaded.has_value(), error_text(loaded));
        REQUIRE(loaded->nodes.size() == 5);
        for (std::size_t i = 0; i < 5; ++i) {
            CHECK(loaded->nodes[i].to_string() == "127.0.0.1:" + std::to_string(7001 + i));
        }
        CHECK(loaded->password.empty());
    }
    const auto single = redlock::load_config(configs / "single-node.json");
    REQUIRE_MESSAGE(single.has_value(), error_text(single));
    REQUIRE(single->nodes.size() == 1);
    CHECK(single->nodes[0].to_string() == "127.0.0.1:6379");
    const auto clusters = redlock::load_config(configs / "cluster.json");
    REQUIRE_MESSAGE(clusters.has_value(), error_text(clusters));
    CHECK(clusters->member_count() == 3);
    CHECK(clusters->clusters.at(2).seeds.at(0).to_string() == "127.0.0.1:7301");
    const auto sentinels = redlock::load_config(configs / "sentinel.json");
    REQUIRE_MESSAGE(sentinels.has_value(), error_text(sentinels));
    CHECK(sentinels->sentinel_masters.at(1).master_name == "locks-b");
    const auto mixed = redlock::load_config(configs / "mixed.json");
    REQUIRE_MESSAGE(mixed.has_value(), error_text(mixed));
    CHECK(mixed->member_count() == 3);  // odd: no even-count warning
    CHECK(mixed->clusters.at(0).wait_replicas == 1);
}

TEST_CASE("config: cluster and Sentinel members, and the errors that name their fields") {
    const auto parsed = redlock::parse_config(R"({
        "clusters": [{"seeds": [{"host": "10.0.0.1", "port": 7000}], "wait_replicas": 1,
                      "refresh_ms": 5000}],
        "sentinel_masters": [{"sentinels": [{"host": "10.0.0.2", "port": 26379}],
                              "master_name": "locks", "refresh_ms": 2000}]})");
    REQUIRE_MESSAGE(parsed.has_value(), error_text(parsed));
    CHECK(parsed->nodes.empty());
    CHECK(parsed->member_count() == 2);
    CHECK(parsed->clusters[0].wait_replicas == 1);
    CHECK(parsed->clusters[0].refresh_interval == std::chrono::milliseconds{5000});
    CHECK(parsed->sentinel_masters[0].master_name == "locks");
    CHECK(parsed->sentinel_masters[0].sentinel_password.empty());

    struct bad {
        const char* json;
        const char* field;
        const char* message;
    };
    const bad cases[] = {
        {R"({})", "/nodes", "is required"},
        {R"({"clusters": []})", "/nodes", "must contain at least one node"},
        {R"({"clusters": [{}]})", "/clusters/0/seeds", "is required"},
        {R"({"clusters": [{"seeds": []}]})", "/clusters/0/seeds", "at least one node"},
        {R"({"clusters": [{"seeds": [{"host": "h", "port": 0}]}]})", "/clusters/0/seeds/0/port",
         "1..65535"},
        {R"({"clusters": [{"seeds": [{"host": "h"}], "wait_replicas": -1}]})",
         "/clusters/0/wait_replicas", "between 0 and 64 (got -1)"},
        {R"({"clusters": [{"seeds": [{"host": "h"}], "wait_replicas": 65}]})",
         "/clusters/0/wait_replicas", "between 0 and 64"},
        {R"({"clusters": [{"seeds": [{"host": "h"}], "refresh_ms": 0}]})", "/clusters/0/refresh_ms",
         "positive"},
        {R"({"clusters": [{"seeds": [{"host": "h"}], "seed": 1}]})", "/clusters/0/seed",
         "unknown field"},
        {R"({"clusters": {"seeds": []}})", "/clusters", "must be an array"},
        {R"({"sentinel_masters": [{"sentinels": [{"host": "h"}]}]})",
         "/sentinel_masters/0/master_name", "is required"},
        {R"({"sentinel_masters": [{"sentinels": [{"host": "h"}], "master_name": ""}]})",
         "/sentinel_masters/0/master_name", "empty"},
        {R"({"sentinel_masters": [{"master_name": "m"}]})", "/sentinel_masters/0/sentinels",
         "is required"},
        {R"({"sentinel_masters": [{"sentinels": [{"host": "h"}], "master_name": "m",
              "auth": {"password_env": "REDLOCK_TEST_SURELY_UNSET_VARIABLE"}}]})",
         "/sentinel_masters/0/auth/password_env", "is not set"},
    };
    for (const bad& b : cases) {
        CAPTURE(b.json);
        const auto r = redlock::parse_config(b.json);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().field == b.field);
        CHECK_MESSAGE(r.error().message.find(b.message) != std::string::npos, r.error().message);
    }
}

TEST_CASE("config: validate_config on configurations built in code") {
    client_config valid;
    valid.nodes = {{"127.0.0.1", 7001, ""}, {"127.0.0.1", 7002, ""}, {"", 6379, "/tmp/r.sock"}};
    REQUIRE_FALSE(redlock::validate_config(valid).has_value());

    SUBCASE("source names the error") {
        client_config config;
        const auto error = redlock::validate_config(config, "code");
        REQUIRE(error.has_value());
        CHECK(error->file == "code");
        CHECK(error->field == "/nodes");
        CHECK(redlock::validate_config(config)->file == "<config>");
    }

    struct code_case {
        const char* name;
        std::function<void(client_config&)> change;
        const char* field;
        const char* fragment;
    };
    const std::vector<code_case> cases{
        {"no nodes", [](client_config& c) { c.nodes.clear(); }, "/nodes", "at least one node"},
        {"port zero", [](client_config& c) { c.nodes[1].port = 0; }, "/nodes/1/port",
         "must be an integer in 1..65535 (got 0)"},
        {"neither", [](client_config& c) { c.nodes[1] = {}; }, "/nodes/1",
         "must have either \"host\" or \"unix\""},
        // A move, not `= "h"`: assigning a literal makes GCC 12 at -O2 raise a
        // false -Wrestrict in basic_string::_M_replace.
        {"both", [](client_config& c) { c.nodes[2].host = std::string{"h"}; }, "/nodes/2",
         "not both"},
        {"relative unix", [](client_config& c) { c.nodes[2].unix_path = "r.sock"; },
         "/nodes/2/unix", "absolute path"},
        {"duplicate", [](client_config& c) { c.nodes.push_back(c.nodes[0]); }, "/nodes/3",
         "duplicate of /nodes/0 (127.0.0.1:7001)"},
        {"duplicate unix", [](client_config& c) { c.nodes.push_back(c.nodes[2]); }, "/nodes/3",
         "duplicate of /nodes/2 (unix:/tmp/r.sock)"},
        {"connect timeout", [](client_config& c) { c.connect_timeout = milliseconds{0}; },
         "/connect_timeout_ms", "must be greater than 0 (got 0)"},
        {"request timeout", [](client_config& c) { c.request_timeout = milliseconds{-5}; },
         "/request_timeout_ms", "must be greater than 0 (got -5)"},
        {"drift floor", [](client_config& c) { c.clock_drift_floor = milliseconds{-1}; },
         "/clock_drift_floor_ms", "must be at least 0 (got -1)"},
        {"ttl", [](client_config& c) { c.lock.ttl = milliseconds{0}; }, "/lock/ttl_ms",
         "must be greater than 0"},
        {"ttl too large", [](client_config& c) { c.lock.ttl = milliseconds{1LL << 40}; },
         "/lock/ttl_ms", "must be at most 2147483647 (got 1099511627776)"},
        {"min validity", [](client_config& c) { c.lock.min_validity = milliseconds{0}; },
         "/lock/min_validity_ms", "must be greater than 0"},
        {"retry delay", [](client_config& c) { c.retry.delay = milliseconds{0}; },
         "/retry/delay_ms", "must be greater than 0"},
        {"retry jitter", [](client_config& c) { c.retry.jitter = milliseconds{-1}; },
         "/retry/jitter_ms", "must be at least 0"},
        {"reconnect min", [](client_config& c) { c.reconnect.min_delay = milliseconds{0}; },
         "/reconnect/min_delay_ms", "must be greater than 0"},
        {"reconnect max", [](client_config& c) { c.reconnect.max_delay = milliseconds{0}; },
         "/reconnect/max_delay_ms", "must be greater than 0"},
        {"drift factor", [](client_config& c) { c.clock_drift_factor = 0.5; },
         "/clock_drift_factor", "less than 0.5"},
        {"drift factor NaN",
         [](client_config& c) { c.clock_drift_factor = std::numeric_limits<double>::quiet_NaN(); },
         "/clock_drift_factor", "(got nan)"},
        {"renew fraction", [](client_config& c) { c.lock.renew_fraction = 0.0; },
         "/lock/renew_fraction", "greater than 0 and less than 1"},
        {"attempts", [](client_config& c) { c.retry.attempts = 0; }, "/retry/attempts",
         "must be at least 1 (got 0)"},
        {"request timeout vs ttl", [](client_config& c) { c.lock.ttl = milliseconds{50}; },
         "/request_timeout_ms", "must be less than /lock/ttl_ms (50)"},
        {"min validity vs ttl",
         [](client_config& c) {
             c.lock.ttl = milliseconds{100};
             c.lock.min_validity = milliseconds{200};
         },
         "/lock/min_validity_ms", "must be less than /lock/ttl_ms (100) (got 200)"},
        {"reconnect order", [](client_config& c) { c.reconnect.min_delay = milliseconds{5000}; },
         "/reconnect/max_delay_ms", "must be at least /reconnect/min_delay_ms (5000)"},
        {"username without password", [](client_config& c) { c.username = "locker"; },
         "/auth/password_env", "/auth/username"},
    };
    for (const auto& c : cases) {
        const std::string name = c.name;
        CAPTURE(name);
        client_config config = valid;
        c.change(config);
        const auto error = redlock::validate_config(config, "code");
        REQUIRE_MESSAGE(error.has_value(), c.name);
        CHECK(error->file == "code");
        CHECK(error->field == c.field);
        CHECK_MESSAGE(error->message.find(c.fragment) != std::string::npos, error->message);
    }

    // A password without a user name is plain AUTH: fine.
    client_config with_password = valid;
    with_password.password = redlock::secret{"x"};
    CHECK_FALSE(redlock::validate_config(with_password).has_value());
}

TEST_CASE("config: fencing needs a fence prefix that cannot collide with the key prefix") {
    const auto fencing = [](json doc) { return with(std::move(doc), "/lock/fencing", true); };
    check_cases({
        {"fence prefix starting with the key prefix",
         with(fencing(minimal()), "/fence_prefix", "redlock:fence:"), "/fence_prefix",
         "must not start with /key_prefix"},
        {"empty key prefix with fencing", with(fencing(minimal()), "/key_prefix", ""),
         "/fence_prefix", "collide"},
    });
    const client_config config = parse_ok(fencing(minimal()).dump());
    CHECK(config.fence_prefix == "redlock-fence:");
    CHECK(config.lock.fencing);
    // Without fencing the counters are never written, so any key prefix is fine.
    CHECK(parse_ok(with(minimal(), "/key_prefix", "").dump()).key_prefix.empty());
}

TEST_CASE("config: no prefix may hold a brace, so that a lock's hash tag is its resource's") {
    check_cases({
        {"key prefix with an opening brace", with(minimal(), "/key_prefix", "app{1}:"),
         "/key_prefix", "must not contain '{' or '}': the hash tag"},
        {"fence prefix with a closing brace", with(minimal(), "/fence_prefix", "fence}:"),
         "/fence_prefix", "must come from the resource"},
        {"queue prefix with braces", with(minimal(), "/queue_prefix", "{q}:"), "/queue_prefix",
         "one slot"},
    });
    // The same rule for a configuration built in code.
    client_config config = parse_ok(minimal().dump());
    config.queue_prefix = "q{";
    const auto error = redlock::validate_config(config, "code");
    REQUIRE(error.has_value());
    CHECK(error->field == "/queue_prefix");
    CHECK(parse_ok(with(minimal(), "/key_prefix", "app:[1]:").dump()).key_prefix == "app:[1]:");
}

TEST_CASE("config: restart_quarantine_ms defaults to the lock TTL and may be turned off") {
    CHECK_FALSE(parse_ok(minimal().dump()).restart_quarantine);  // unset: lock.ttl applies
    CHECK(parse_ok(with(minimal(), "/restart_quarantine_ms", 0).dump()).restart_quarantine ==
          milliseconds{0});
    CHECK(parse_ok(with(minimal(), "/restart_quarantine_ms", 30000).dump()).restart_quarantine ==
          milliseconds{30000});
    check_cases({
        {"negative quarantine", with(minimal(), "/restart_quarantine_ms", -1),
         "/restart_quarantine_ms", "must be 0 (off) or more"},
        {"quarantine as text", with(minimal(), "/restart_quarantine_ms", "1s"),
         "/restart_quarantine_ms", "must be an integer"},
    });
}

TEST_CASE("config: waiting settings") {
    const client_config defaults = parse_ok(minimal().dump());
    CHECK(defaults.lock.wait == redlock::wait_mode::targeted);
    CHECK(defaults.lock.waiter_ttl == milliseconds{2000});
    CHECK(defaults.queue_prefix == "redlock-queue:");
    const client_config fair =
        parse_ok(with(with(minimal(), "/lock/wait", "fair"), "/lock/waiter_ttl_ms", 5000).dump());
    CHECK(fair.lock.wait == redlock::wait_mode::fair);
    CHECK(fair.lock.waiter_ttl == milliseconds{5000});
    check_cases({
        {"unknown wait mode", with(minimal(), "/lock/wait", "spin"), "/lock/wait",
         "must be one of \"targeted\", \"fair\", \"broadcast\", \"poll\" (got \"spin\")"},
        {"wait mode as a number", with(minimal(), "/lock/wait", 1), "/lock/wait",
         "must be a string"},
        {"zero waiter ttl", with(minimal(), "/lock/waiter_ttl_ms", 0), "/lock/waiter_ttl_ms",
         "greater than 0"},
        {"empty queue prefix", with(minimal(), "/queue_prefix", ""), "/queue_prefix",
         "must not be empty"},
    });
}
