#include "cli_stress_check.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

namespace redlock_torture {
namespace {

auto number(const std::string& text) -> std::optional<std::int64_t> {
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

auto keys_matching(const redlock_test::redis_server& node, const std::string& pattern)
    -> std::vector<std::string> {
    std::vector<std::string> keys;
    std::istringstream reply{node.command({"KEYS", pattern}).value_or("")};
    for (std::string key; std::getline(reply, key);) {
        if (!key.empty()) keys.push_back(key);
    }
    return keys;
}

}  // namespace

auto read_sections(const std::filesystem::path& file, std::map<int, section_record>& into)
    -> std::size_t {
    std::ifstream in{file};
    std::size_t unreadable = 0;
    for (std::string line; std::getline(in, line);) {
        std::istringstream words{line};
        std::string tag, invocation, fence, ns, extra;
        words >> tag >> invocation >> fence >> ns;
        const auto id = number(invocation);
        const auto at = number(ns);
        if (!id || !at || (tag != "begin" && tag != "end") || (words >> extra)) {
            ++unreadable;
            continue;
        }
        section_record& s = into[static_cast<int>(*id)];
        if (s.invocation >= 0 && s.fence != fence) ++unreadable;  // begin and end disagree
        s.invocation = static_cast<int>(*id);
        s.fence = fence;
        std::int64_t& slot = tag == "begin" ? s.begin_ns : s.end_ns;
        if (slot >= 0) ++unreadable;
        slot = *at;
    }
    return unreadable;
}

auto check_sections(std::vector<section_record> sections) -> std::vector<section_problem> {
    std::erase_if(sections, [](const section_record& s) { return s.begin_ns < 0 || s.end_ns < 0; });
    std::sort(sections.begin(), sections.end(),
              [](const auto& a, const auto& b) { return a.begin_ns < b.begin_ns; });
    std::vector<section_problem> problems;
    // The section that ended last so far: a later one must not begin before it ended,
    // even when a shorter one sits between them.
    const section_record* last_ended = nullptr;
    const section_record* previous = nullptr;
    for (const auto& s : sections) {
        if (last_ended != nullptr && s.begin_ns < last_ended->end_ns)
            problems.push_back({"overlap", *last_ended, s});
        if (previous != nullptr) {
            const auto before = number(previous->fence);
            const auto now = number(s.fence);
            if (!before || !now || *now <= *before)
                problems.push_back({"fence not increasing", *previous, s});
        }
        if (last_ended == nullptr || s.end_ns > last_ended->end_ns) last_ended = &s;
        previous = &s;
    }
    return problems;
}

auto describe(const section_record& s, std::int64_t origin_ns) -> std::string {
    auto ms = [origin_ns](std::int64_t ns) {
        if (ns < 0) return std::string{"?"};
        char text[32];
        std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns - origin_ns) / 1e6);
        return std::string{text};
    };
    return "invocation " + std::to_string(s.invocation) + " fence " + s.fence + " [" +
           ms(s.begin_ns) + ", " + ms(s.end_ns) + "] ms";
}

auto find_leftovers(const std::vector<redlock_test::redis_server>& nodes) -> leftovers {
    leftovers found;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const std::string where = "node " + std::to_string(i) + ": ";
        for (const auto& key : keys_matching(nodes[i], "redlock:*")) {
            found.locks.push_back(where + key + " = " + nodes[i].get(key).value_or("(gone)") +
                                  ", pttl " + std::to_string(nodes[i].pttl(key)) + " ms");
        }
        for (const auto& key : keys_matching(nodes[i], "redlock-queue:*"))
            found.queues.push_back(where + key);
    }
    return found;
}

}  // namespace redlock_torture
