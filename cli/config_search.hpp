#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

/// Where a config file was found, and why it was that one.
struct config_choice {
    std::string path;
    std::string source;  ///< "--config", "$REDLOCK_CONFIG", or "search"
};

/// What the search needs from the process: pure, so every order is unit-tested
/// without touching the environment or the file system.
struct config_search_inputs {
    std::optional<std::string> flag;                             ///< --config, if given
    std::function<std::optional<std::string>(const char*)> env;  ///< getenv
    std::function<bool(const std::string&)> exists;              ///< a regular file is there
};

/// The places searched when neither --config nor $REDLOCK_CONFIG names a file,
/// in order: ./redlock.json, $XDG_CONFIG_HOME/redlock/config.json (else
/// $HOME/.config/redlock/config.json; neither when both are unset or relative),
/// /etc/redlock/config.json.
[[nodiscard]] auto config_search_path(const config_search_inputs& in) -> std::vector<std::string>;

/// The config to load: --config if given, else $REDLOCK_CONFIG if set and not
/// empty (an explicit choice is never passed over for another file: a missing
/// one fails when it is opened, naming it), else the first of
/// config_search_path() that exists. Empty when none does.
[[nodiscard]] auto find_config(const config_search_inputs& in) -> std::optional<config_choice>;

/// The usage error for find_config() finding nothing: every place tried, and
/// where the example configs are installed.
[[nodiscard]] auto no_config_message(const config_search_inputs& in, std::string_view examples_dir)
    -> std::string;

}  // namespace redlock::cli
