#include "election_record.hpp"

#include "record_fields.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace redlock_torture {
auto lead_end_name(lead_end how) noexcept -> const char* {
    switch (how) {
        case lead_end::abandoned:
            return "abandoned";
        case lead_end::lost:
            return "lost";
        case lead_end::stopped:
            return "stopped";
        case lead_end::killed:
            return "killed";
        case lead_end::resigned:
            break;
    }
    return "resigned";
}

auto lead_end_from_name(std::string_view name) noexcept -> std::optional<lead_end> {
    for (const auto how : {lead_end::resigned, lead_end::abandoned, lead_end::lost,
                           lead_end::stopped, lead_end::killed}) {
        if (name == lead_end_name(how)) return how;
    }
    return std::nullopt;
}

auto lead_record::format() const -> std::string {
    std::ostringstream out;
    out << "lead worker=" << worker << " election=" << election << " term=" << term
        << " called=" << called_ns << " start=" << start_ns << " end=" << end_ns
        << " until_start=" << until_start_ns << " until_end=" << until_end_ns
        << " valid_start=" << (valid_at_start ? 1 : 0) << " valid_end=" << (valid_at_end ? 1 : 0)
        << " lost=" << (lost ? 1 : 0) << " lost_at=" << lost_at_ns << " ttl=" << ttl_ms
        << " how=" << lead_end_name(how) << " resign_ok=" << resign_ok << " writes=" << writes;
    return out.str();
}

auto lead_record::describe(std::int64_t origin_ns) const -> std::string {
    std::ostringstream out;
    out << "candidate " << worker << " '" << election << "' term " << term << ": led ["
        << ms_since(start_ns, origin_ns) << ", " << ms_since(end_ns, origin_ns)
        << "] ms, valid until " << ms_since(until_end_ns, origin_ns) << " ms (at start "
        << ms_since(until_start_ns, origin_ns) << "), campaign called at "
        << ms_since(called_ns, origin_ns) << " ms, ttl " << ttl_ms << " ms, " << lead_end_name(how)
        << (valid_at_end ? "" : ", invalid at end") << (lost ? ", lost" : "");
    if (lost_at_ns != 0) out << " at " << ms_since(lost_at_ns, origin_ns) << " ms";
    out << ", " << writes << " writes";
    return out.str();
}

auto write_record::format() const -> std::string {
    return "write worker=" + std::to_string(worker) + " term=" + std::to_string(term) +
           " at=" + std::to_string(at_ns) + " late=" + (late ? "1" : "0") +
           " until=" + std::to_string(until_ns);
}

auto won_record::format() const -> std::string {
    std::ostringstream out;
    out << "won worker=" << worker << " term=" << term << " called=" << called_ns
        << " start=" << start_ns << " until=" << until_ns << " valid=" << (valid ? 1 : 0)
        << " ttl=" << ttl_ms;
    return out.str();
}

auto mark_record::format(std::string_view tag) const -> std::string {
    return std::string{tag} + " worker=" + std::to_string(worker) +
           " term=" + std::to_string(term) + " at=" + std::to_string(at_ns);
}

auto write_record::describe(std::int64_t origin_ns) const -> std::string {
    return "candidate " + std::to_string(worker) + (late ? " late write" : " write") +
           " with term " + std::to_string(term) + " at " + ms_since(at_ns, origin_ns) + " ms";
}

auto parse_lead(std::string_view line) -> std::optional<lead_record> {
    const auto fields = fields_of(line, "lead");
    if (!fields) return std::nullopt;
    lead_record r;
    const auto election = fields->find("election");
    const auto how = fields->find("how");
    if (election == fields->end() || election->second.empty() || how == fields->end())
        return std::nullopt;
    r.election = election->second;
    const auto parsed = lead_end_from_name(how->second);
    if (!parsed) return std::nullopt;
    r.how = *parsed;
    const bool ok =
        field_number(*fields, "worker", r.worker) && field_number(*fields, "term", r.term) &&
        field_number(*fields, "called", r.called_ns) &&
        field_number(*fields, "start", r.start_ns) && field_number(*fields, "end", r.end_ns) &&
        field_number(*fields, "until_start", r.until_start_ns) &&
        field_number(*fields, "until_end", r.until_end_ns) &&
        field_flag(*fields, "valid_start", r.valid_at_start) &&
        field_flag(*fields, "valid_end", r.valid_at_end) && field_flag(*fields, "lost", r.lost) &&
        field_number(*fields, "lost_at", r.lost_at_ns) && field_number(*fields, "ttl", r.ttl_ms) &&
        field_number(*fields, "resign_ok", r.resign_ok) &&
        field_number(*fields, "writes", r.writes);
    if (!ok) return std::nullopt;
    return r;
}

auto parse_write(std::string_view line) -> std::optional<write_record> {
    const auto fields = fields_of(line, "write");
    if (!fields) return std::nullopt;
    write_record w;
    const bool ok = field_number(*fields, "worker", w.worker) &&
                    field_number(*fields, "term", w.term) && field_number(*fields, "at", w.at_ns) &&
                    field_flag(*fields, "late", w.late) &&
                    field_number(*fields, "until", w.until_ns);
    if (!ok) return std::nullopt;
    return w;
}

auto parse_won(std::string_view line) -> std::optional<won_record> {
    const auto fields = fields_of(line, "won");
    if (!fields) return std::nullopt;
    won_record w;
    const bool ok =
        field_number(*fields, "worker", w.worker) && field_number(*fields, "term", w.term) &&
        field_number(*fields, "called", w.called_ns) &&
        field_number(*fields, "start", w.start_ns) && field_number(*fields, "until", w.until_ns) &&
        field_flag(*fields, "valid", w.valid) && field_number(*fields, "ttl", w.ttl_ms);
    if (!ok) return std::nullopt;
    return w;
}

auto parse_mark(std::string_view line, std::string_view tag) -> std::optional<mark_record> {
    const auto fields = fields_of(line, tag);
    if (!fields) return std::nullopt;
    mark_record m;
    const bool ok = field_number(*fields, "worker", m.worker) &&
                    field_number(*fields, "term", m.term) && field_number(*fields, "at", m.at_ns);
    if (!ok) return std::nullopt;
    return m;
}

auto read_candidate_file(const std::filesystem::path& file) -> candidate_file {
    candidate_file contents;
    std::ifstream in{file};
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        if (auto lead = parse_lead(line)) {
            contents.leads.push_back(std::move(*lead));
        } else if (auto write = parse_write(line)) {
            contents.writes.push_back(*write);
        } else if (auto won = parse_won(line)) {
            contents.wons.push_back(*won);
        } else if (auto ending = parse_mark(line, "ending")) {
            contents.endings.push_back(*ending);
        } else if (auto failed = parse_mark(line, "campaign")) {
            contents.campaign_calls.push_back(*failed);
        } else if (auto killed = parse_mark(line, "killed")) {
            contents.killed = *killed;
        } else if (auto summary = parse_summary(line)) {
            contents.summary = std::move(*summary);
        } else {
            ++contents.unreadable_lines;
        }
    }
    return contents;
}

auto killed_lead(const candidate_file& file, const std::string& election)
    -> std::optional<lead_record> {
    if (!file.killed || file.wons.empty()) return std::nullopt;
    const won_record& won = file.wons.back();
    for (const auto& l : file.leads) {
        if (l.term == won.term) return std::nullopt;  // it had ended, and said how
    }
    lead_record r;
    r.worker = won.worker;
    r.election = election;
    r.term = won.term;
    r.called_ns = won.called_ns;
    r.start_ns = won.start_ns;
    r.until_start_ns = won.until_ns;
    r.until_end_ns = won.until_ns;
    r.valid_at_start = won.valid;
    r.ttl_ms = won.ttl_ms;
    r.how = lead_end::killed;
    r.end_ns = file.killed->at_ns;
    for (const auto& e : file.endings) {
        if (e.term == won.term) {
            r.stepping_down = true;
            r.end_ns = e.at_ns;
        }
    }
    for (const auto& w : file.writes) {
        if (w.term != won.term || w.late) continue;
        ++r.writes;
        r.until_end_ns = std::max(r.until_end_ns, w.until_ns);
    }
    r.valid_at_end = r.until_end_ns > r.end_ns;
    return r;
}

}  // namespace redlock_torture
