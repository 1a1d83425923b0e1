// The CLI over TLS, against TLS-only redis-server processes: a config file
// kept in a directory of its own names its CA relative to itself, and the
// command runs from elsewhere. A CA that did not sign the nodes' certificates
// is refused with the reason.
#include "cli/cli_process.hpp"
#include "support/redis_server.hpp"
#include "support/tls_certs.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using redlock_test::cli_process;
using redlock_test::one_object;
using redlock_test::tls_certs;
using redlock_test::tls_server;

namespace {

namespace fs = std::filesystem;

/// Three TLS-only masters and `<certs dir>/etc/redlock.json` naming them, with
/// "tls": {"ca_file": "ca.crt"} beside it: the CA of `trusted`, or of the
/// masters' own certificates by default.
struct tls_cli {
    tls_certs certs;
    std::deque<tls_server> servers;
    fs::path etc = certs.dir() / "etc";
    fs::path work = certs.dir() / "work";  // the working directory: no ca.crt there
    fs::path config = etc / "redlock.json";

    explicit tls_cli(const tls_certs* trusted = nullptr) {
        for (int i = 0; i < 3; ++i) servers.emplace_back(certs);
        fs::create_directories(etc);
        fs::create_directories(work);
        fs::copy_file((trusted != nullptr ? *trusted : certs).ca(), etc / "ca.crt");
        auto nodes = nlohmann::json::array();
        for (const auto& s : servers)
            nodes.push_back({{"host", "127.0.0.1"}, {"port", s.tls_port()}});
        const nlohmann::json settings{{"nodes", nodes},
                                      {"connect_timeout_ms", 1000},
                                      {"request_timeout_ms", 250},
                                      {"retry", {{"attempts", 2}, {"delay_ms", 50}}},
                                      {"tls", {{"ca_file", "ca.crt"}}}};
        std::ofstream{config} << settings.dump(2);
    }

    auto redlock(std::vector<std::string> args) -> redlock_test::cli_result {
        args.insert(args.begin(), "--json");
        return text(std::move(args));
    }
    /// The same, printing for a person.
    auto text(std::vector<std::string> args) -> redlock_test::cli_result {
        args.insert(args.begin(), {"--config", config.string()});
        cli_process p{args, certs.dir(), {}, work};
        return p.wait();
    }
};

/// The line of `table` that begins with node `name` (after its indent), or empty.
auto line_of(const std::string& table, const std::string& name) -> std::string {
    std::size_t at = 0;
    while (at < table.size()) {
        const std::size_t end = std::min(table.find('\n', at), table.size());
        const std::string line = table.substr(at, end - at);
        if (line.starts_with("  " + name + " ")) return line;
        at = end + 1;
    }
    return {};
}

}  // namespace

TEST_SUITE("cli") {
    TEST_CASE("cli over TLS: acquire and release, the CA found beside the config file") {
        tls_cli cli;

        const auto acquired = cli.redlock({"acquire", "-r", "orders:1", "--ttl-ms", "30000"});
        REQUIRE_MESSAGE(acquired.status == 0, acquired.err);
        const auto lock = one_object(acquired);
        const std::string value = lock.at("value").get<std::string>();
        // A majority at least: `acquire` exits once two of three granted, and the
        // third may not have been connected yet.
        int holding = 0;
        for (const auto& s : cli.servers) holding += s.server().get("redlock:{orders:1}") == value;
        CHECK(holding >= 2);

        const auto released = cli.redlock({"release", "-r", "orders:1", "--value", value});
        REQUIRE_MESSAGE(released.status == 0, released.err);
        // Decided at a majority; a slower node's delete is still answering then,
        // and the process waits for it before exiting: no key is left anywhere.
        const auto report = one_object(released);
        CHECK(report.at("released").get<int>() + report.at("pending").get<int>() == holding);
        for (const auto& s : cli.servers) CHECK_FALSE(s.server().exists("redlock:{orders:1}"));
    }

    TEST_CASE("cli over TLS: a CA that did not sign the nodes is refused, with the reason") {
        const tls_certs stranger;
        tls_cli cli{&stranger};
        const auto refused = cli.redlock({"acquire", "-r", "orders:2"});
        CHECK(refused.status == 69);  // a quorum unreachable
        const auto error = one_object(refused).at("error");
        INFO(error.dump());
        CHECK(error.at("message").get<std::string>().find("unknown CA") != std::string::npos);
        for (const auto& s : cli.servers) CHECK(s.server().dbsize() == 0);
    }

    TEST_CASE("cli over TLS: check shows each node's TLS version, cipher and verification") {
        tls_cli cli;
        const auto machine = cli.redlock({"check"});
        REQUIRE_MESSAGE(machine.status == 0, machine.err);
        const auto human = cli.text({"check"});
        REQUIRE_MESSAGE(human.status == 0, human.err);
        INFO(human.out);
        const auto nodes = one_object(machine).at("nodes");
        REQUIRE(nodes.size() == 3);
        for (const auto& n : nodes) {
            INFO(n.dump());
            const auto& tls = n.at("tls");
            REQUIRE(tls.is_object());
            const std::string version = tls.at("version").get<std::string>();
            const std::string cipher = tls.at("cipher").get<std::string>();
            CHECK(version.starts_with("TLSv1."));
            CHECK_FALSE(cipher.empty());
            CHECK(tls.at("verified").get<bool>());
            // The table says the same on the node's line.
            const std::string line = line_of(human.out, n.at("node").get<std::string>());
            CHECK(line.ends_with("  " + version + " " + cipher + " verified"));
        }

        // Verification off, and a plain node beside the TLS ones ("tls": false).
        const redlock_test::redis_server plain;
        auto settings = nlohmann::json::parse(std::ifstream{cli.config});
        settings["tls"]["verify"] = false;
        settings["nodes"].push_back(
            {{"host", "127.0.0.1"}, {"port", plain.address().port}, {"tls", false}});
        std::ofstream{cli.config} << settings.dump(2);
        const auto unverified = cli.redlock({"check"});
        REQUIRE_MESSAGE(unverified.status == 0, unverified.err);
        const auto table = cli.text({"check"});
        REQUIRE_MESSAGE(table.status == 0, table.err);
        INFO(table.out);
        const auto all = one_object(unverified).at("nodes");
        REQUIRE(all.size() == 4);
        for (std::size_t i = 0; i < 3; ++i) {
            INFO(all[i].dump());
            CHECK_FALSE(all[i].at("tls").at("verified").get<bool>());
            CHECK(line_of(table.out, all[i].at("node").get<std::string>())
                      .ends_with(" not verified (verification off in config)"));
        }
        CHECK(all[3].at("tls").is_null());
        CHECK(line_of(table.out, all[3].at("node").get<std::string>()).ends_with("  TLS off"));
    }
}
