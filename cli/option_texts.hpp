#pragma once

// What the subcommands' declarations share (options.cpp, operator_options.cpp):
// the help texts every subcommand ends with, and the checks of common flags.

#include <CLI/CLI.hpp>
#include <redlock/lock.hpp>

#include <charconv>
#include <optional>
#include <string>
#include <system_error>

namespace redlock::cli {

inline constexpr long long max_ms = 2147483647;

inline constexpr const char* global_help = R"(
Global options, accepted before or after the subcommand:
  --config FILE   config file (default: $REDLOCK_CONFIG, else the first of
                  ./redlock.json, $XDG_CONFIG_HOME/redlock/config.json,
                  /etc/redlock/config.json)
  --json          print exactly one JSON object on stdout, errors included
  -v, --verbose   per-node details on stderr)";

inline constexpr const char* common_exit_codes = R"(
  64  bad usage
  78  bad or unreadable config (the message names the file and the field)
  1   any other failure (the message says what))";

inline const CLI::Validator non_empty{
    [](std::string& text) -> std::string { return text.empty() ? "must not be empty" : ""; }, ""};

/// 1 to redlock::max_permits; the message names the value given.
inline const CLI::Validator permit_count{
    [](std::string& text) -> std::string {
        long long value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        const std::string range = "between 1 and " + std::to_string(max_permits);
        if (ec == std::errc::result_out_of_range) return "must be " + range + ", not " + text;
        if (ec != std::errc{} || end != text.data() + text.size())
            return "must be a whole number " + range + ", not '" + text + "'";
        if (value < 1 || value > max_permits) return "must be " + range + ", not " + text;
        return {};
    },
    ""};

inline void add_permits_option(CLI::App& sub, std::optional<int>& into, const char* help) {
    sub.add_option("--permits", into, help)->type_name("K")->check(permit_count);
}

}  // namespace redlock::cli
