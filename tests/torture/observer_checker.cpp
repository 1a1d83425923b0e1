#include "observer_checker.hpp"

#include "record_fields.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace redlock_torture {

auto seen_record::format() const -> std::string {
    std::ostringstream out;
    out << "seen observer=" << observer << " at=" << at_ns << " leader=" << (leader ? 1 : 0)
        << " term=" << term << " from=" << from << " proclaimed=" << proclaimed
        << " highest=" << highest << " agreeing=" << agreeing << " answered=" << answered;
    return out.str();
}

auto seen_record::describe(std::int64_t origin_ns) const -> std::string {
    std::string text =
        "observer " + std::to_string(observer) + " at " + ms_since(at_ns, origin_ns) + " ms: ";
    if (!leader) return text + "no leader (highest term " + std::to_string(highest) + ")";
    return text + "term " + std::to_string(term) + " led by candidate " + std::to_string(from) +
           " (" + std::to_string(agreeing) + " of " + std::to_string(answered) +
           " agreeing, proclamation " + std::to_string(proclaimed) + ")";
}

auto parse_seen(std::string_view line) -> std::optional<seen_record> {
    const auto fields = fields_of(line, "seen");
    if (!fields) return std::nullopt;
    seen_record s;
    const bool ok =
        field_number(*fields, "observer", s.observer) && field_number(*fields, "at", s.at_ns) &&
        field_flag(*fields, "leader", s.leader) && field_number(*fields, "term", s.term) &&
        field_number(*fields, "from", s.from) &&
        field_number(*fields, "proclaimed", s.proclaimed) &&
        field_number(*fields, "highest", s.highest) &&
        field_number(*fields, "agreeing", s.agreeing) &&
        field_number(*fields, "answered", s.answered);
    if (!ok) return std::nullopt;
    return s;
}

auto candidate_of(std::string_view value) -> int {
    constexpr std::string_view prefix = "candidate-";
    if (!value.starts_with(prefix)) return -1;
    value.remove_prefix(prefix.size());
    value = value.substr(0, value.find(' '));
    int id = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), id);
    return ec == std::errc{} && end == value.data() + value.size() && id >= 0 ? id : -1;
}

auto read_observer_file(const std::filesystem::path& file) -> observer_file {
    observer_file contents;
    std::ifstream in{file};
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        if (auto seen = parse_seen(line)) {
            contents.seen.push_back(*seen);
        } else if (auto summary = parse_summary(line)) {
            contents.summary = std::move(*summary);
        } else {
            ++contents.unreadable_lines;
        }
    }
    return contents;
}

namespace {

/// Rule 2: the leader reported was a candidate's, or one of its campaign's unrecorded
/// attempts; "" if so.
auto invented_why(const seen_record& s,
                  const std::multimap<std::uint64_t, const lead_record*>& by_term,
                  const std::vector<mark_record>& campaign_calls, bool& unrecorded_seen)
    -> std::string {
    const auto [first, last] = by_term.equal_range(s.term);
    if (first == last) {
        for (const auto& u : campaign_calls) {
            if (u.worker == s.from && u.at_ns <= s.at_ns) {
                unrecorded_seen = true;
                return {};
            }
        }
        return "no candidate recorded a leadership with this term, nor did candidate " +
               std::to_string(s.from) + " have a campaign called before it";
    }
    for (auto it = first; it != last; ++it) {
        const lead_record& l = *it->second;
        if (l.worker != s.from) continue;
        if (l.called_ns <= s.at_ns) return {};
        return "reported before its candidate called campaign (at " +
               ms_since(l.called_ns, s.at_ns) + " ms from the report)";
    }
    return "term " + std::to_string(s.term) + " was candidate " +
           std::to_string(first->second->worker) + "'s, not the one its value names";
}

void check_eventual(const std::vector<seen_record>& seen, const std::vector<lead_record>& leads,
                    const std::optional<final_stretch>& stretch, observer_report& report) {
    if (seen.empty()) return;
    const seen_record& last = seen.back();
    if (stretch) {
        const lead_record* final_lead = nullptr;
        for (const auto& l : leads) {
            if (l.valid_at_start && l.start_ns <= stretch->from_ns &&
                l.believed_end_ns() >= stretch->until_ns)
                final_lead = &l;
        }
        if (final_lead != nullptr) {
            report.eventual_checked = true;
            report.final_term = final_lead->term;
            const seen_record* before = nullptr;
            for (const auto& s : seen) {
                if (s.at_ns <= stretch->until_ns) before = &s;
            }
            if (before == nullptr || !before->leader || before->term != final_lead->term) {
                report.eventual.push_back(
                    {before != nullptr ? *before : seen_record{},
                     "the last report by the final stretch's end does not name the final "
                     "leader's term " +
                         std::to_string(final_lead->term) +
                         (before == nullptr ? " (there was none)" : "")});
            }
            if (last.at_ns <= stretch->until_ns) {
                report.eventual.push_back(
                    {last, "nothing reported after the final leader stepped down"});
            }
        }
    }
    if (last.leader)
        report.eventual.push_back({last,
                                   "the last report names a leader after every candidate "
                                   "stepped down"});
}

}  // namespace

auto check_observer(const std::vector<seen_record>& seen, const std::vector<lead_record>& leads,
                    const std::vector<mark_record>& campaign_calls,
                    const std::optional<final_stretch>& stretch) -> observer_report {
    observer_report report;
    std::multimap<std::uint64_t, const lead_record*> by_term;
    for (const auto& l : leads) by_term.emplace(l.term, &l);
    std::set<std::uint64_t> terms;
    std::uint64_t highest = 0;
    for (std::size_t i = 0; i < seen.size(); ++i) {
        const seen_record& s = seen[i];
        ++report.reports;
        if (!s.leader) {
            ++report.none_reports;
            continue;
        }
        ++report.leader_reports;
        terms.insert(s.term);
        if (s.term < highest) {
            report.decreases.push_back(
                {s, "term " + std::to_string(s.term) + " after term " + std::to_string(highest)});
        }
        highest = std::max(highest, s.term);
        bool unrecorded = false;
        if (auto why = invented_why(s, by_term, campaign_calls, unrecorded); !why.empty())
            report.invented.push_back({s, std::move(why)});
        report.unrecorded_seen += unrecorded ? 1 : 0;
        // How long it went on naming this leader past the leadership's validity.
        const auto [first, last] = by_term.equal_range(s.term);
        if (first != last && i + 1 < seen.size()) {
            const std::int64_t stale = seen[i + 1].at_ns - first->second->until_end_ns;
            report.longest_stale_ns = std::max(report.longest_stale_ns, stale);
        }
    }
    report.terms_seen = terms.size();
    for (const auto& l : leads) {
        if (l.valid_at_start && !terms.contains(l.term)) ++report.terms_missed;
    }
    check_eventual(seen, leads, stretch, report);
    return report;
}

auto describe_observer_problems(const observer_report& report, std::int64_t origin_ns,
                                std::size_t limit) -> std::string {
    std::string text;
    const auto add = [&](const char* title, const std::vector<observer_problem>& problems) {
        for (std::size_t i = 0; i < problems.size() && i < limit; ++i) {
            text += std::string{"\n"} + title + ": " + problems[i].seen.describe(origin_ns) + ": " +
                    problems[i].why;
        }
    };
    add("OBSERVER TERM DECREASED", report.decreases);
    add("OBSERVER INVENTED A LEADER", report.invented);
    add("OBSERVER NOT TOLD OF THE END", report.eventual);
    return text;
}

}  // namespace redlock_torture
