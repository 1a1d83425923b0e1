// break, audit and check-fence: the operators' tools (README, "Operators' tools").
#include "client_setup.hpp"
#include "commands.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>

namespace redlock::cli {
namespace {

/// 2026-11-27T19:20:01.123Z
auto iso_time(std::chrono::system_clock::time_point t) -> std::string {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
    const std::time_t seconds = static_cast<std::time_t>(ms.count() / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[96];
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                  static_cast<int>(ms.count() % 1000));
    return text;
}

auto reachable_count(const std::vector<node_report>& nodes) -> std::size_t {
    std::size_t n = 0;
    for (const auto& r : nodes) n += r.status == node_status::ok ? 1 : 0;
    return n;
}

auto entry_json(const audit_entry& e) -> json {
    return {
        {"resource", e.resource},
        {"time_ms",
         std::chrono::duration_cast<std::chrono::milliseconds>(e.time.time_since_epoch()).count()},
        {"time", iso_time(e.time)},
        {"breaker", e.breaker},
        {"reason", e.reason},
        {"kind", e.kind},
        {"value", e.value},
        {"holder_name", e.holder.empty() ? json(nullptr) : json(e.holder)},
        {"fence", or_null(e.fence)},
        {"nodes", e.nodes}};
}

auto entry_text(const audit_entry& e) -> std::string {
    std::string line = "  " + iso_time(e.time) + "  '" + e.resource + "'  " + e.kind;
    if (!e.value.empty()) line += " " + named_value(e.value);
    line += "  broken by " + e.breaker + ": " + e.reason;
    if (e.fence) line += "  fence " + std::to_string(*e.fence);
    return line + "  (" + std::to_string(e.nodes) + " nodes)\n";
}

}  // namespace

auto break_command(const global_options& global, const break_options& args, const reporter& out)
    -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());
    force_release_options options;
    options.permits = args.permits;
    options.breaker = args.breaker;
    auto report = locks->force_release(args.resource, args.reason, options);
    if (!report) return out.fail(report.error());

    json broken = json::array();
    std::string text;
    for (const auto& h : report->broken) {
        broken.push_back({{"kind", h.kind},
                          {"permit", or_null(h.permit)},
                          {"value", h.value},
                          {"holder_name", h.holder.empty() ? json(nullptr) : json(h.holder)},
                          {"nodes", h.nodes},
                          {"ttl_left_ms", h.ttl_left.count()}});
        text += "  " + h.kind + (h.permit ? " " + std::to_string(*h.permit) : std::string{}) + " " +
                named_value(h.value) + ", on " + std::to_string(h.nodes) + " nodes, " +
                format_ms(h.ttl_left.count()) + " left\n";
    }
    const json result{{"resource", report->resource},   {"quorum", report->quorum},
                      {"broken_on", report->broken_on}, {"majority", report->majority()},
                      {"broken", std::move(broken)},    {"nodes", nodes_json(report->nodes)}};
    out.detail(report->nodes);
    const std::string where = "on " + std::to_string(report->broken_on) + " of " +
                              std::to_string(report->nodes.size()) + " nodes";
    if (!report->majority()) {
        return out.fail(
            failure_report{exit_unavailable, "quorum_unreachable",
                           "broke '" + args.resource + "' " + where + " only, " +
                               std::to_string(report->quorum) +
                               " needed: the holders may renew and repair what is left"},
            report->nodes, result);
    }
    const std::string headline =
        report->broken.empty()
            ? "'" + args.resource + "' was free " + where + "; recorded in the audit\n"
            : "broke '" + args.resource + "' " + where + " (recorded in the audit):\n";
    out.result(result, headline + text);
    return exit_ok;
}

auto audit_command(const global_options& global, const audit_options& args, const reporter& out)
    -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());
    auto log = locks->audit(args.resource, args.limit);
    if (!log) return out.fail(log.error());

    json entries = json::array();
    json minority = json::array();
    const std::string subject =
        args.resource.empty() ? std::string{"any resource"} : "'" + log->resource + "'";
    std::string text = "breaks of " + subject + ", newest first:\n";
    for (const auto& e : log->entries) {
        entries.push_back(entry_json(e));
        text += entry_text(e);
    }
    if (log->entries.empty()) text = "no break of " + subject + " recorded on a majority\n";
    if (!log->minority.empty()) text += "recorded on fewer than a majority (failed breaks):\n";
    for (const auto& e : log->minority) {
        minority.push_back(entry_json(e));
        text += entry_text(e);
    }
    const json result{{"resource", log->resource},
                      {"quorum", log->quorum},
                      {"entries", std::move(entries)},
                      {"minority", std::move(minority)},
                      {"nodes", nodes_json(log->nodes)}};
    const std::size_t answered = reachable_count(log->nodes);
    if (answered < log->quorum) {
        return out.fail(failure_report{exit_unavailable, "quorum_unreachable",
                                       "only " + std::to_string(answered) + " of " +
                                           std::to_string(log->nodes.size()) + " nodes answered, " +
                                           std::to_string(log->quorum) +
                                           " needed to read the audit of " + subject},
                        log->nodes, result);
    }
    out.result(result, text);
    return exit_ok;
}

auto check_fence_command(const global_options& global, const fence_options& args,
                         const reporter& out) -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());
    auto check = locks->check_fence(args.resource, args.fence);
    if (!check) return out.fail(check.error());

    json nodes = json::array();
    std::string table;
    std::size_t answered = 0;
    for (const auto& n : check->nodes) {
        answered += n.reachable ? 1 : 0;
        nodes.push_back({{"node", n.node},
                         {"reachable", n.reachable},
                         {"counter", or_null(n.counter)},
                         {"holder", or_null(n.holder)},
                         {"ttl_ms", n.ttl ? json(n.ttl->count()) : json(nullptr)},
                         {"detail", n.detail}});
        table +=
            "  " + n.node + "  " +
            (!n.reachable ? "unreachable: " + n.detail
                          : "counter " + (n.counter ? std::to_string(*n.counter) : "none") + ", " +
                                (n.holder ? "held by " + named_value(*n.holder) : "free")) +
            "\n";
    }
    const json result{{"resource", check->resource},        {"fence", check->token},
                      {"current", check->current},          {"holder", or_null(check->holder)},
                      {"highest", or_null(check->highest)}, {"reason", check->reason},
                      {"nodes", std::move(nodes)}};
    const std::string subject =
        "fence " + std::to_string(check->token) + " of '" + check->resource + "'";
    if (answered < check->quorum) {
        return out.fail(
            failure_report{exit_unavailable, "quorum_unreachable", subject + ": " + check->reason},
            {}, result);
    }
    if (!check->current) {
        if (!out.json_mode()) out.result(result, table);
        return out.fail(failure_report{exit_failure, "not_current",
                                       subject + " is not current: " + check->reason},
                        {}, result);
    }
    out.result(result, subject + " is current: held by " + named_value(check->holder.value_or("")) +
                           " on a majority\n" + table);
    return exit_ok;
}

}  // namespace redlock::cli
