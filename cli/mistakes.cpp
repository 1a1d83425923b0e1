#include "mistakes.hpp"

#include "suggest.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string_view>
#include <system_error>
#include <vector>

namespace redlock::cli {
namespace {

/// The option of `app` named `name` (a long name without its dashes, or a short
/// one), or null.
auto option_named(const CLI::App& app, std::string_view name, bool long_name)
    -> const CLI::Option* {
    for (const CLI::Option* opt : app.get_options()) {
        const auto& names = long_name ? opt->get_lnames() : opt->get_snames();
        if (std::find(names.begin(), names.end(), name) != names.end()) return opt;
    }
    return nullptr;
}

void add_long_names(const CLI::App& app, std::vector<std::string>& into) {
    for (const CLI::Option* opt : app.get_options()) {
        const auto& names = opt->get_lnames();
        into.insert(into.end(), names.begin(), names.end());
    }
}

auto did_you_mean(const std::string& closest, std::string_view prefix) -> std::string {
    return closest.empty() ? std::string{}
                           : ": did you mean '" + std::string{prefix} + closest + "'?";
}

}  // namespace

auto unknown_word_message(const CLI::App& app, int argc, char** argv) -> std::string {
    const CLI::App* sub = nullptr;
    const auto find = [&](std::string_view name, bool long_name) -> const CLI::Option* {
        const CLI::Option* opt = sub != nullptr ? option_named(*sub, name, long_name) : nullptr;
        return opt != nullptr ? opt : option_named(app, name, long_name);
    };
    const auto takes_value = [](const CLI::Option* opt) { return opt->get_expected_min() > 0; };
    for (int i = 1; i < argc; ++i) {
        const std::string_view word{argv[i]};
        if (word.starts_with("--") && word.size() > 2) {
            const std::string_view name = word.substr(2, word.find('=') - 2);
            const CLI::Option* opt = find(name, true);
            if (opt == nullptr) {
                std::vector<std::string> known;
                if (sub != nullptr) add_long_names(*sub, known);
                add_long_names(app, known);
                return "unknown flag '--" + std::string{name} + "'" +
                       did_you_mean(closest_word(name, known), "--");
            }
            if (takes_value(opt) && word.find('=') == std::string_view::npos) ++i;
        } else if (word.size() > 1 && word[0] == '-' &&
                   std::isdigit(static_cast<unsigned char>(word[1])) == 0) {
            const std::string_view name = word.substr(1, 1);
            const CLI::Option* opt = find(name, false);
            if (opt == nullptr) return "unknown flag '-" + std::string{name} + "'";
            if (takes_value(opt) && word.size() == 2) ++i;
        } else if (sub == nullptr) {
            std::vector<std::string> names;
            for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
                if (s->get_name() == word) sub = s;
                names.push_back(s->get_name());
            }
            if (sub == nullptr) {
                return "unknown subcommand '" + std::string{word} + "'" +
                       did_you_mean(closest_word(word, names), "");
            }
        } else {
            return {};  // a stray argument: the parser says so
        }
    }
    return {};
}

auto names_json_file(const std::string& shell_command) -> bool {
    std::error_code ec;
    const std::filesystem::path path{shell_command};
    if (shell_command.empty() || !std::filesystem::is_regular_file(path, ec)) return false;
    if (std::filesystem::file_size(path, ec) > (1U << 20) || ec) return false;  // no config's size
    std::ifstream in{path, std::ios::binary};
    const std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    return in.good() || in.eof() ? nlohmann::json::accept(text) : false;
}

auto known_permits(client& locks, const std::string& resource) -> std::optional<int> {
    const auto status = locks.status(resource, 1);  // each node's K, whatever we name
    if (!status) return std::nullopt;
    std::map<int, std::size_t> votes;
    for (const auto& n : status->nodes) {
        if (n.reachable && n.permits) ++votes[*n.permits];
    }
    const auto most =
        std::max_element(votes.begin(), votes.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    if (most == votes.end()) return std::nullopt;
    return most->first;
}

auto wrong_kind_hint(client& locks, const value_options& args) -> std::string {
    const std::string& value = args.value;
    if (const auto status = locks.status(args.resource)) {
        bool writer = false;
        bool reader = false;
        for (const auto& n : status->nodes) {
            writer = writer || n.holder == value;
            reader = reader || std::any_of(n.readers.begin(), n.readers.end(),
                                           [&](const node_reader& r) { return r.value == value; });
        }
        if (reader && !args.shared) {
            return "this value is held as a reader: " +
                   (args.permits ? "use --shared, not --permits " + std::to_string(*args.permits)
                                 : std::string{"add --shared"});
        }
        if (writer && (args.shared || args.permits)) {
            return "this value is held as an exclusive lock (a writer): drop " +
                   (args.shared ? std::string{"--shared"}
                                : "--permits " + std::to_string(*args.permits));
        }
    }
    const auto permits = known_permits(locks, args.resource);
    if (!permits || permits == args.permits) return {};
    const auto semaphore = locks.status(args.resource, *permits);
    if (!semaphore) return {};
    const bool held = std::any_of(
        semaphore->permit_holders.begin(), semaphore->permit_holders.end(),
        [&](const permit_state& p) {
            return std::any_of(p.nodes.begin(), p.nodes.end(),
                               [&](const node_permit_state& n) { return n.holder == value; });
        });
    if (!held) return {};
    const std::string flag = "--permits " + std::to_string(*permits);
    std::string hint = "this value is held as one of " + std::to_string(*permits) + " permits: ";
    if (args.shared) return hint + "use " + flag + ", not --shared";
    if (args.permits)
        return hint + "use " + flag + ", not --permits " + std::to_string(*args.permits);
    return hint + "add " + flag;
}

}  // namespace redlock::cli
