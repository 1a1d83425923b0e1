#include "config_search.hpp"

namespace redlock::cli {
namespace {

/// The variable's value when it is set to an absolute path; the XDG base
/// directory specification says a relative one is to be ignored.
auto absolute_dir(const config_search_inputs& in, const char* name) -> std::optional<std::string> {
    auto value = in.env(name);
    if (!value || value->empty() || value->front() != '/') return std::nullopt;
    return value;
}

}  // namespace

auto config_search_path(const config_search_inputs& in) -> std::vector<std::string> {
    std::vector<std::string> places{"./redlock.json"};
    if (const auto xdg = absolute_dir(in, "XDG_CONFIG_HOME")) {
        places.push_back(*xdg + "/redlock/config.json");
    } else if (const auto home = absolute_dir(in, "HOME")) {
        places.push_back(*home + "/.config/redlock/config.json");
    }
    places.emplace_back("/etc/redlock/config.json");
    return places;
}

auto find_config(const config_search_inputs& in) -> std::optional<config_choice> {
    if (in.flag) return config_choice{*in.flag, "--config"};
    if (auto named = in.env("REDLOCK_CONFIG"); named && !named->empty())
        return config_choice{std::move(*named), "$REDLOCK_CONFIG"};
    for (auto& place : config_search_path(in)) {
        if (in.exists(place)) return config_choice{std::move(place), "search"};
    }
    return std::nullopt;
}

auto no_config_message(const config_search_inputs& in, std::string_view examples_dir)
    -> std::string {
    std::string message =
        "no cluster config found: pass --config FILE or set REDLOCK_CONFIG; tried";
    const auto places = config_search_path(in);
    for (std::size_t i = 0; i < places.size(); ++i) message += (i == 0 ? " " : ", ") + places[i];
    message += " (examples: ";
    message += examples_dir;
    message += ")";
    return message;
}

}  // namespace redlock::cli
