// The CLI's config search (cli/config_search.hpp): every order of precedence,
// with the environment and the file system given, not touched.

#include "config_search.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

using redlock::cli::config_search_inputs;
using redlock::cli::config_search_path;
using redlock::cli::find_config;
using redlock::cli::no_config_message;

namespace {

struct fake_process {
    std::map<std::string, std::string> env;
    std::set<std::string> files;
    std::optional<std::string> flag;

    [[nodiscard]] auto inputs() const -> config_search_inputs {
        return {flag,
                [this](const char* name) -> std::optional<std::string> {
                    const auto found = env.find(name);
                    if (found == env.end()) return std::nullopt;
                    return found->second;
                },
                [this](const std::string& path) { return files.contains(path); }};
    }
};

constexpr const char* here = "./redlock.json";
constexpr const char* xdg = "/x/redlock/config.json";
constexpr const char* home = "/home/u/.config/redlock/config.json";
constexpr const char* etc = "/etc/redlock/config.json";

}  // namespace

TEST_SUITE("config search") {
    TEST_CASE("--config wins over everything, even a file that is not there") {
        fake_process p{{{"REDLOCK_CONFIG", "/env.json"}, {"HOME", "/home/u"}},
                       {here, home, etc},
                       "/flag.json"};
        const auto chosen = find_config(p.inputs());
        REQUIRE(chosen);
        CHECK(chosen->path == "/flag.json");
        CHECK(chosen->source == "--config");
    }

    TEST_CASE("$REDLOCK_CONFIG comes next, and is not passed over when missing") {
        fake_process p{{{"REDLOCK_CONFIG", "/env.json"}, {"HOME", "/home/u"}}, {here, etc}, {}};
        const auto chosen = find_config(p.inputs());
        REQUIRE(chosen);
        CHECK(chosen->path == "/env.json");
        CHECK(chosen->source == "$REDLOCK_CONFIG");
    }

    TEST_CASE("an empty $REDLOCK_CONFIG counts as unset") {
        fake_process p{{{"REDLOCK_CONFIG", ""}}, {etc}, {}};
        const auto chosen = find_config(p.inputs());
        REQUIRE(chosen);
        CHECK(chosen->path == etc);
        CHECK(chosen->source == "search");
    }

    TEST_CASE("the search takes the first that exists, in order") {
        const std::map<std::string, std::string> env{{"XDG_CONFIG_HOME", "/x"},
                                                     {"HOME", "/home/u"}};
        // Every subset of the three places: the first present in order is chosen.
        const std::vector<std::string> order{here, xdg, etc};
        for (unsigned mask = 0; mask < 8; ++mask) {
            fake_process p{env, {}, {}};
            for (unsigned i = 0; i < 3; ++i)
                if ((mask & (1U << i)) != 0) p.files.insert(order[i]);
            p.files.insert(home);  // never searched while XDG_CONFIG_HOME is set
            CAPTURE(mask);
            const auto chosen = find_config(p.inputs());
            if (mask == 0) {
                CHECK_FALSE(chosen);
                continue;
            }
            REQUIRE(chosen);
            unsigned first = 0;
            while ((mask & (1U << first)) == 0) ++first;
            CHECK(chosen->path == order[first]);
        }
    }

    TEST_CASE("without XDG_CONFIG_HOME, ~/.config is searched") {
        fake_process p{{{"HOME", "/home/u"}}, {home, etc}, {}};
        CHECK(config_search_path(p.inputs()) == std::vector<std::string>{here, home, etc});
        const auto chosen = find_config(p.inputs());
        REQUIRE(chosen);
        CHECK(chosen->path == home);
    }

    TEST_CASE("a relative XDG_CONFIG_HOME is ignored, as the XDG spec says") {
        fake_process p{{{"XDG_CONFIG_HOME", "rel"}, {"HOME", "/home/u"}}, {}, {}};
        CHECK(config_search_path(p.inputs()) == std::vector<std::string>{here, home, etc});
    }

    TEST_CASE("with neither XDG_CONFIG_HOME nor HOME, only ./ and /etc") {
        fake_process p{{}, {}, {}};
        CHECK(config_search_path(p.inputs()) == std::vector<std::string>{here, etc});
    }

    TEST_CASE("nothing found: the message names every place tried and the examples") {
        fake_process p{{{"XDG_CONFIG_HOME", "/x"}}, {}, {}};
        const auto message = no_config_message(p.inputs(), "/usr/share/redlock");
        for (const char* place : {here, xdg, etc}) {
            CAPTURE(place);
            CHECK(message.find(place) != std::string::npos);
        }
        CHECK(message.find("--config") != std::string::npos);
        CHECK(message.find("REDLOCK_CONFIG") != std::string::npos);
        CHECK(message.find("/usr/share/redlock") != std::string::npos);
    }
}
