// The "tls" section of a configuration and a node's "tls": false: what is read,
// the defaults, and errors named by their JSON pointer. Whether OpenSSL accepts
// a file's contents is checked at client::create (tests/integration/tls_test.cpp).

#include <doctest/doctest.h>
#include <redlock/config.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

constexpr std::string_view source = "tls.json";

/// A readable file (its contents do not matter to the parser), removed at the end.
class temp_file {
public:
    temp_file()
        : path_{std::filesystem::temp_directory_path() /
                ("redlock-config-tls-" + std::to_string(::getpid()) + ".pem")} {
        std::ofstream{path_} << "not checked here\n";
    }
    temp_file(const temp_file&) = delete;
    auto operator=(const temp_file&) -> temp_file& = delete;
    ~temp_file() { std::filesystem::remove(path_); }
    [[nodiscard]] auto path() const -> std::string { return path_.string(); }

private:
    std::filesystem::path path_;
};

auto error_of(const std::string& text) -> redlock::config_error {
    auto parsed = redlock::parse_config(text, source);
    REQUIRE_MESSAGE(!parsed.has_value(), "accepted: ", text);
    return parsed.error();
}

auto nodes_with_tls(const std::string& tls) -> std::string {
    return R"({"nodes": [{"host": "127.0.0.1", "port": 7001}], "tls": )" + tls + "}";
}

}  // namespace

TEST_SUITE("config") {
    TEST_CASE("tls: absent by default, every field read, verification on by default") {
        auto plain = redlock::parse_config(R"({"nodes": [{"host": "a", "port": 1}]})", source);
        REQUIRE(plain);
        CHECK_FALSE(plain->tls.has_value());
        CHECK(plain->nodes[0].tls);

        const temp_file file;
        const std::string f = "\"" + file.path() + "\"";
        auto parsed = redlock::parse_config(
            R"({"nodes": [{"host": "a", "port": 1}, {"host": "b", "port": 2, "tls": false},
                          {"unix": "/run/redis.sock"}],
                "tls": {"ca_file": )" +
                f + R"(, "cert_file": )" + f + R"(, "key_file": )" + f +
                R"(, "server_name": "redis.internal"}})",
            source);
        REQUIRE_MESSAGE(parsed, (parsed ? "" : parsed.error().what()));
        REQUIRE(parsed->tls.has_value());
        CHECK(parsed->tls->ca_file == file.path());
        CHECK(parsed->tls->cert_file == file.path());
        CHECK(parsed->tls->key_file == file.path());
        CHECK(parsed->tls->server_name == "redis.internal");
        CHECK(parsed->tls->verify);
        CHECK(parsed->nodes[0].tls);
        CHECK_FALSE(parsed->nodes[1].tls);

        auto unverified = redlock::parse_config(nodes_with_tls(R"({"verify": false})"), source);
        REQUIRE(unverified);
        CHECK_FALSE(unverified->tls->verify);
        CHECK(unverified->tls->ca_file.empty());  // the system's CAs
    }

    TEST_CASE("tls: errors name the field") {
        auto e = error_of(nodes_with_tls("true"));
        CHECK(e.field == "/tls");
        CHECK(e.message.find("must be an object") != std::string::npos);

        e = error_of(nodes_with_tls(R"({"cafile": "x"})"));
        CHECK(e.field == "/tls/cafile");

        e = error_of(nodes_with_tls(R"({"verify": "yes"})"));
        CHECK(e.field == "/tls/verify");

        e = error_of(nodes_with_tls(R"({"server_name": ""})"));
        CHECK(e.field == "/tls/server_name");
        CHECK(e.message == "must not be empty");

        e = error_of(nodes_with_tls(R"({"ca_file": "/nonexistent/redlock/ca.crt"})"));
        CHECK(e.field == "/tls/ca_file");
        CHECK(e.message ==
              "cannot read \"/nonexistent/redlock/ca.crt\": No such file or directory");
        CHECK(e.what() ==
              "tls.json: /tls/ca_file: cannot read \"/nonexistent/redlock/ca.crt\": "
              "No such file or directory");

        const temp_file file;
        e = error_of(nodes_with_tls(R"({"cert_file": ")" + file.path() + "\"}"));
        CHECK(e.field == "/tls/key_file");
        CHECK(e.message == "is required with /tls/cert_file");
        e = error_of(nodes_with_tls(R"({"key_file": ")" + file.path() + "\"}"));
        CHECK(e.field == "/tls/cert_file");

        e = error_of(R"({"nodes": [{"host": "a", "port": 1, "tls": "no"}]})");
        CHECK(e.field == "/nodes/0/tls");
        CHECK(e.message.find("must be a boolean") != std::string::npos);
    }

    TEST_CASE("paths in a config file are relative to its directory, not the working one") {
        const auto dir = std::filesystem::temp_directory_path() /
                         ("redlock-config-relative-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir / "pki");
        std::ofstream{dir / "pki" / "ca.crt"} << "not checked here\n";
        std::ofstream{dir / "client.crt"} << "not checked here\n";
        std::ofstream{dir / "client.key"} << "not checked here\n";
        const temp_file absolute;
        const std::string text =
            R"({"nodes": [{"host": "a", "port": 1}, {"unix": "/run/redis.sock"}],
                "tls": {"ca_file": "pki/ca.crt", "cert_file": "client.crt",
                        "key_file": ")" +
            absolute.path() + R"("}})";
        std::ofstream{dir / "redlock.json"} << text;
        // The working directory has none of these files.
        REQUIRE_FALSE(std::filesystem::exists("pki/ca.crt"));

        const auto loaded = redlock::load_config(dir / "redlock.json");
        REQUIRE_MESSAGE(loaded, (loaded ? std::string{} : loaded.error().what()));
        CHECK(loaded->tls->ca_file == (dir / "pki/ca.crt").string());
        CHECK(loaded->tls->cert_file == (dir / "client.crt").string());
        CHECK(loaded->tls->key_file == absolute.path());  // absolute: as it is
        CHECK(loaded->nodes[1].unix_path == "/run/redis.sock");

        // A relative file that is not there is named where it was looked for.
        std::filesystem::remove(dir / "pki" / "ca.crt");
        const auto missing = redlock::load_config(dir / "redlock.json");
        REQUIRE_FALSE(missing);
        CHECK(missing.error().field == "/tls/ca_file");
        CHECK(missing.error().message.find((dir / "pki/ca.crt").string()) != std::string::npos);

        // The same text given as text stays relative to the working directory.
        const auto parsed = redlock::parse_config(text, source);
        REQUIRE_FALSE(parsed);
        CHECK_MESSAGE(parsed.error().message.find("\"pki/ca.crt\"") != std::string::npos,
                      parsed.error().what());
        std::filesystem::remove_all(dir);
    }
}
