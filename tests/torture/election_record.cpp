#include "election_record.hpp"

#include "record_fields.hpp"

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
        case lead_end::resigned:
            break;
    }
    return "resigned";
}

auto lead_end_from_name(std::string_view name) noexcept -> std::optional<lead_end> {
    for (const auto how :
         {lead_end::resigned, lead_end::abandoned, lead_end::lost, lead_end::stopped}) {
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
           " at=" + std::to_string(at_ns) + " late=" + (late ? "1" : "0");
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
                    field_flag(*fields, "late", w.late);
    if (!ok) return std::nullopt;
    return w;
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
        } else if (auto summary = parse_summary(line)) {
            contents.summary = std::move(*summary);
        } else {
            ++contents.unreadable_lines;
        }
    }
    return contents;
}

}  // namespace redlock_torture
