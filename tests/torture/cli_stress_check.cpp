#include "cli_stress_check.hpp"

#include "checker.hpp"
#include "leftovers.hpp"

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

}  // namespace

auto read_sections(const std::filesystem::path& file, std::map<int, section_record>& into,
                   std::vector<std::string>* unreadable) -> std::size_t {
    std::ifstream in{file};
    std::size_t count = 0;
    auto cannot_read = [&](const std::string& line) {
        ++count;
        if (unreadable != nullptr) unreadable->push_back(file.filename().string() + ": " + line);
    };
    for (std::string line; std::getline(in, line);) {
        std::istringstream words{line};
        std::string tag, invocation, kind_text, fence, ns, extra;
        words >> tag >> invocation >> kind_text >> fence >> ns;
        const auto id = number(invocation);
        const auto at = number(ns);
        const bool leader = kind_text == "leader";  // a writer of an election
        const auto kind = leader ? hold_kind::writer : kind_from_name(kind_text);
        if (!id || !at || !kind || (tag != "begin" && tag != "end") || (words >> extra)) {
            cannot_read(line);
            continue;
        }
        section_record& s = into[static_cast<int>(*id)];
        // Begin and end disagree; or a second begin or end.
        std::int64_t& slot = tag == "begin" ? s.begin_ns : s.end_ns;
        if ((s.invocation >= 0 && (s.fence != fence || s.kind != *kind || s.leader != leader)) ||
            slot >= 0)
            cannot_read(line);
        s.invocation = static_cast<int>(*id);
        s.kind = *kind;
        s.leader = leader;
        s.fence = fence;
        slot = *at;
    }
    return count;
}

auto match_sections(const std::map<int, section_record>& sections, const std::map<int, int>& codes,
                    std::int64_t origin_ns) -> matched_sections {
    matched_sections matched;
    for (const auto& [id, code] : codes) {
        const auto found = sections.find(id);
        const bool complete =
            found != sections.end() && found->second.begin_ns >= 0 && found->second.end_ns >= 0;
        if (code == 0) {
            if (complete) {
                matched.held.push_back(found->second);
            } else {
                matched.mismatches.push_back("invocation " + std::to_string(id) +
                                             " exited 0 without a complete section record");
            }
        } else if (found != sections.end()) {
            matched.mismatches.push_back(
                "invocation " + std::to_string(id) + " exited " + std::to_string(code) +
                " (not acquired) but its section ran: " + describe(found->second, origin_ns));
        }
    }
    return matched;
}

auto check_sections(const std::vector<section_record>& sections, int permits)
    -> std::vector<section_problem> {
    std::vector<section_problem> problems;
    std::map<int, const section_record*> by_id;
    std::vector<hold_record> holds;
    for (const auto& s : sections) {
        if (s.begin_ns < 0 || s.end_ns < 0) continue;
        hold_record h;
        h.worker = s.invocation;  // names the section in the checker's findings
        h.kind = s.kind;
        // Permits live under keys of their own: the checker treats a resource's permits
        // apart from its readers and writers, whatever the name. An election is a lock of
        // its own, its leaders its writers.
        h.resource = s.leader ? "election" : s.kind == hold_kind::permit ? "semaphore" : "lock";
        h.permits = s.kind == hold_kind::permit ? permits : 0;
        h.permit = -1;  // not named: only the count is checked
        if (s.kind == hold_kind::permit && s.fence != "-") {
            const auto permit = number(s.fence);
            if (!permit || *permit < 0 || *permit >= permits) {
                // Its holder believed it held a permit all the same: counted toward K.
                problems.push_back({"no such permit", {s}});
            } else {
                h.permit = static_cast<int>(*permit);
            }
        } else if (s.kind != hold_kind::permit) {
            const auto fence = number(s.fence);
            if (!fence || *fence < 0) {
                problems.push_back({s.leader ? "no term" : "no fence", {s}});
                continue;
            }
            // A writer's token is one more than the highest counter its grants read; a
            // reader's 0 is the counter before any writer. A term is a writer's token.
            if (*fence == 0 && s.kind == hold_kind::writer)
                problems.push_back({s.leader ? "term 0" : "fence 0", {s}});
            h.fence = static_cast<std::uint64_t>(*fence);
        }
        h.start_ns = h.called_ns = s.begin_ns;
        h.end_ns = h.until_start_ns = h.until_end_ns = s.end_ns;
        h.valid_at_start = true;
        by_id[s.invocation] = &s;
        holds.push_back(std::move(h));
    }
    // The values check_holds() would call impossible were checked above, section by section.
    const auto report = check_holds(holds, permit_names::optional);
    auto section = [&by_id](const hold_record& h) { return *by_id.at(h.worker); };
    for (const auto& o : report.overlaps) {
        problems.push_back({o.earlier.resource == "election" ? "leaders overlap" : "overlap",
                            {section(o.earlier), section(o.later)}});
    }
    for (const auto& v : report.inversions) {
        problems.push_back(
            {v.earlier.resource == "election" ? "term not increasing" : "fence not increasing",
             {section(v.earlier), section(v.later)}});
    }
    for (const auto& e : report.excesses) {
        section_problem p{"more than " + std::to_string(permits) + " permits", {}};
        for (const auto& h : e.holders) p.sections.push_back(section(h));
        problems.push_back(std::move(p));
    }
    return problems;
}

auto section_kind(const section_record& s) noexcept -> const char* {
    return s.leader ? "leader" : kind_name(s.kind);
}

auto describe(const section_record& s, std::int64_t origin_ns) -> std::string {
    auto ms = [origin_ns](std::int64_t ns) {
        if (ns < 0) return std::string{"?"};
        char text[32];
        std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns - origin_ns) / 1e6);
        return std::string{text};
    };
    return "invocation " + std::to_string(s.invocation) + " " + section_kind(s) +
           (s.kind == hold_kind::permit ? " "
            : s.leader                  ? " term "
                                        : " fence ") +
           s.fence + " [" + ms(s.begin_ns) + ", " + ms(s.end_ns) + "] ms";
}

auto find_leftovers(const std::vector<redlock_test::redis_server>& nodes) -> leftovers {
    leftovers found;
    for (const auto& key : scan_keys(nodes, key_layout{})) {
        const bool queue = key.shape == key_shape::queue || key.shape == key_shape::liveness;
        auto& list = key.shape == key_shape::leader ? found.leaders
                     : queue                        ? found.queues
                                                    : found.locks;
        list.push_back(key.describe());
    }
    return found;
}

}  // namespace redlock_torture
