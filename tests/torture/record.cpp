#include "record.hpp"

#include "record_fields.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace redlock_torture {
auto kind_name(hold_kind kind) noexcept -> const char* {
    switch (kind) {
        case hold_kind::reader:
            return "reader";
        case hold_kind::permit:
            return "permit";
        case hold_kind::writer:
            break;
    }
    return "writer";
}

auto kind_from_name(std::string_view name) noexcept -> std::optional<hold_kind> {
    for (const auto kind : {hold_kind::writer, hold_kind::reader, hold_kind::permit}) {
        if (name == kind_name(kind)) return kind;
    }
    return std::nullopt;
}

auto via_name(hold_via via) noexcept -> const char* {
    switch (via) {
        case hold_via::reentrant:
            return "reentrant";
        case hold_via::session:
            return "session";
        case hold_via::plain:
            break;
    }
    return "plain";
}

auto via_from_name(std::string_view name) noexcept -> std::optional<hold_via> {
    for (const auto via : {hold_via::plain, hold_via::reentrant, hold_via::session}) {
        if (name == via_name(via)) return via;
    }
    return std::nullopt;
}

auto monotonic_ns() noexcept -> std::int64_t {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

auto hold_record::format() const -> std::string {
    std::ostringstream out;
    out << "hold worker=" << worker << " thread=" << thread << " resource=" << resource
        << " kind=" << kind_name(kind);
    if (kind == hold_kind::permit) out << " permits=" << permits << " permit=" << permit;
    // A plain hold says nothing of how it was taken: its line is as it always was.
    if (via != hold_via::plain) out << " via=" << via_name(via);
    if (via == hold_via::session) out << " session=" << session;
    out << " fenced=" << (fenced ? 1 : 0) << " fence=" << fence << " called=" << called_ns
        << " start=" << start_ns << " end=" << end_ns << " until_start=" << until_start_ns
        << " until_end=" << until_end_ns << " valid_start=" << (valid_at_start ? 1 : 0)
        << " valid_end=" << (valid_at_end ? 1 : 0) << " lost=" << (lost ? 1 : 0)
        << " lost_at=" << lost_at_ns << " renew=" << (auto_renew ? 1 : 0) << " ttl=" << ttl_ms
        << " extends=" << extends << " deleted=" << deleted << " release_ok=" << release_ok;
    return out.str();
}

auto hold_record::describe(std::int64_t origin_ns) const -> std::string {
    std::ostringstream out;
    out << "worker " << worker << " thread " << thread << " '" << resource << "' "
        << kind_name(kind);
    if (via == hold_via::reentrant) out << " (reentrant)";
    if (via == hold_via::session) out << " (in session " << session << ")";
    if (kind == hold_kind::permit) {
        out << " " << permit << " of " << permits;
    } else if (fenced) {
        out << " fence " << fence;
    } else {
        out << " unfenced";
    }
    out << ": held [" << ms_since(start_ns, origin_ns) << ", " << ms_since(end_ns, origin_ns)
        << "] ms, valid until " << ms_since(until_end_ns, origin_ns) << " ms (at start "
        << ms_since(until_start_ns, origin_ns) << "), acquire called at "
        << ms_since(called_ns, origin_ns) << " ms, ttl " << ttl_ms << " ms"
        << (auto_renew ? ", auto-renewed" : "") << (valid_at_end ? "" : ", invalid at end")
        << (lost ? ", lost" : "");
    if (lost_at_ns != 0) out << " at " << ms_since(lost_at_ns, origin_ns) << " ms";
    if (extends > 0) out << ", " << extends << " manual extends";
    out << ", release deleted " << deleted;
    return out.str();
}

auto worker_summary::format() const -> std::string {
    std::string text = "summary worker=" + std::to_string(worker);
    for (const auto& [key, value] : counts) text += " " + key + "=" + std::to_string(value);
    return text;
}

auto parse_hold(std::string_view line) -> std::optional<hold_record> {
    const auto fields = fields_of(line, "hold");
    if (!fields) return std::nullopt;
    hold_record r;
    const auto resource = fields->find("resource");
    if (resource == fields->end() || resource->second.empty()) return std::nullopt;
    r.resource = resource->second;
    const auto kind = fields->find("kind");
    if (kind == fields->end()) return std::nullopt;
    const auto parsed = kind_from_name(kind->second);
    if (!parsed) return std::nullopt;
    r.kind = *parsed;
    // A permit names its semaphore's K and the permit held; the other kinds name neither.
    // Any number is read: a permit past K or below 0 is what the library said, and the
    // checker reports it (impossible_values), never as a line it could not read.
    if (r.kind == hold_kind::permit) {
        if (!field_number(*fields, "permits", r.permits) ||
            !field_number(*fields, "permit", r.permit))
            return std::nullopt;
    } else if (fields->contains("permits") || fields->contains("permit")) {
        return std::nullopt;
    }
    // No `via`: a plain hold. A session's hold names its session, and no other hold does.
    if (const auto via = fields->find("via"); via != fields->end()) {
        const auto parsed_via = via_from_name(via->second);
        if (!parsed_via) return std::nullopt;
        r.via = *parsed_via;
    }
    if (const auto session = fields->find("session"); session != fields->end()) {
        if (r.via != hold_via::session || session->second.empty()) return std::nullopt;
        r.session = session->second;
    } else if (r.via == hold_via::session) {
        return std::nullopt;
    }
    const bool ok =
        field_number(*fields, "worker", r.worker) && field_number(*fields, "thread", r.thread) &&
        field_flag(*fields, "fenced", r.fenced) && field_number(*fields, "fence", r.fence) &&
        field_number(*fields, "called", r.called_ns) &&
        field_number(*fields, "start", r.start_ns) && field_number(*fields, "end", r.end_ns) &&
        field_number(*fields, "until_start", r.until_start_ns) &&
        field_number(*fields, "until_end", r.until_end_ns) &&
        field_flag(*fields, "valid_start", r.valid_at_start) &&
        field_flag(*fields, "valid_end", r.valid_at_end) && field_flag(*fields, "lost", r.lost) &&
        field_number(*fields, "lost_at", r.lost_at_ns) &&
        field_flag(*fields, "renew", r.auto_renew) && field_number(*fields, "ttl", r.ttl_ms) &&
        field_number(*fields, "extends", r.extends) &&
        field_number(*fields, "deleted", r.deleted) &&
        field_number(*fields, "release_ok", r.release_ok);
    // An unfenced hold names no token (the worker writes 0). A permit with a token, or a
    // fenced writer with token 0, is read, and reported by the checker.
    if (!ok || (!r.fenced && r.fence != 0)) return std::nullopt;
    return r;
}

auto parse_summary(std::string_view line) -> std::optional<worker_summary> {
    auto fields = fields_of(line, "summary");
    if (!fields) return std::nullopt;
    worker_summary s;
    if (!field_number(*fields, "worker", s.worker)) return std::nullopt;
    fields->erase("worker");
    for (const auto& [key, value] : *fields) {
        std::uint64_t n = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc{} || end != value.data() + value.size()) return std::nullopt;
        s.counts[key] = n;
    }
    return s;
}

auto read_worker_file(const std::filesystem::path& file) -> worker_file {
    worker_file contents;
    std::ifstream in{file};
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        if (auto hold = parse_hold(line)) {
            contents.holds.push_back(std::move(*hold));
        } else if (auto summary = parse_summary(line)) {
            contents.summary = std::move(*summary);
        } else {
            contents.unreadable.push_back(std::move(line));
        }
    }
    return contents;
}

}  // namespace redlock_torture
