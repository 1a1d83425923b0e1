// Where `redlock` finds its config when --config is not given: $REDLOCK_CONFIG,
// ./redlock.json, $XDG_CONFIG_HOME/redlock/config.json (or ~/.config), then
// /etc/redlock/config.json; --verbose says which. The order itself is
// unit-tested in tests/unit/config_search_test.cpp; these run the binary.
#include "cli/cli_process.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using redlock_test::cli_process;
using redlock_test::cli_result;
using redlock_test::one_object;

namespace {

namespace fs = std::filesystem;

class config_search_cluster : public redlock_test::cli_fixture {
public:
    config_search_cluster()
        : cli_fixture{"redlock-cli-config-",
                      {.connect_timeout_ms = 1000, .request_timeout_ms = 250, .ttl_ms = 2000}} {
        fs::create_directories(cwd);
        fs::create_directories(home);
    }

    /// `redlock -v --json check` started in `cwd` with a clean slate of
    /// variables: no REDLOCK_CONFIG, no XDG_CONFIG_HOME, HOME an empty dir;
    /// `env` then adds its own.
    auto check_from(std::vector<std::string> env) -> cli_result {
        std::vector<std::string> all{"REDLOCK_CONFIG", "XDG_CONFIG_HOME", "HOME=" + home.string()};
        all.insert(all.end(), env.begin(), env.end());
        cli_process p{{"-v", "--json", "check"}, dir, all, cwd};
        return p.wait();
    }

    fs::path cwd = dir / "work";
    fs::path home = dir / "home";
};

constexpr const char* system_config = "/etc/redlock/config.json";

}  // namespace

TEST_SUITE("cli") {
    TEST_CASE_FIXTURE(config_search_cluster, "./redlock.json is found, and --verbose says so") {
        fs::copy_file(config, cwd / "redlock.json");

        const auto result = check_from({});

        CHECK(result.status == 0);
        CHECK(one_object(result).at("reachable") == 5);
        CHECK(result.err.find("config ./redlock.json (found by the search)") != std::string::npos);
    }

    TEST_CASE_FIXTURE(config_search_cluster,
                      "$XDG_CONFIG_HOME/redlock/config.json, then ~/.config/redlock/config.json") {
        const auto xdg = dir / "xdg";
        fs::create_directories(xdg / "redlock");
        fs::copy_file(config, xdg / "redlock" / "config.json");
        fs::create_directories(home / ".config" / "redlock");
        fs::copy_file(config, home / ".config" / "redlock" / "config.json");

        const auto from_xdg = check_from({"XDG_CONFIG_HOME=" + xdg.string()});
        CHECK(from_xdg.status == 0);
        CHECK(from_xdg.err.find((xdg / "redlock" / "config.json").string()) != std::string::npos);

        const auto from_home = check_from({});
        CHECK(from_home.status == 0);
        CHECK(from_home.err.find((home / ".config/redlock/config.json").string()) !=
              std::string::npos);
    }

    TEST_CASE_FIXTURE(config_search_cluster, "--config and $REDLOCK_CONFIG come first") {
        // A broken ./redlock.json would fail the run if it were read.
        { std::ofstream{cwd / "redlock.json"} << "{ not json"; }

        const auto from_env = check_from({"REDLOCK_CONFIG=" + config.string()});
        CHECK(from_env.status == 0);
        CHECK(from_env.err.find("(from $REDLOCK_CONFIG)") != std::string::npos);

        cli_process flagged{{"-v", "--json", "check", "--config", config.string()},
                            dir,
                            {"REDLOCK_CONFIG=/nowhere.json"},
                            cwd};
        const auto from_flag = flagged.wait();
        CHECK(from_flag.status == 0);
        CHECK(from_flag.err.find("(from --config)") != std::string::npos);
    }

    TEST_CASE_FIXTURE(config_search_cluster, "no config anywhere: exit 78, every place named") {
        const auto result = check_from({});

        if (fs::exists(system_config)) {
            // This machine has a system-wide config: the search must end there.
            CHECK(result.err.find(system_config) != std::string::npos);
        } else {
            CHECK(result.status == 78);
            const auto error = one_object(result).at("error");
            CHECK(error.at("code") == "no_config");
            const auto message = error.at("message").get<std::string>();
            CHECK(message.find("./redlock.json") != std::string::npos);
            CHECK(message.find((home / ".config/redlock/config.json").string()) !=
                  std::string::npos);
            CHECK(message.find(system_config) != std::string::npos);
        }
    }
}
