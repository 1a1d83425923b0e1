#include "support/cluster_view.hpp"

#include "sansio/hash_slot.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace redlock_test {
namespace {

auto split(std::string_view text, char separator) -> std::vector<std::string_view> {
    std::vector<std::string_view> parts;
    while (!text.empty()) {
        const auto at = text.find(separator);
        if (at != 0) parts.push_back(text.substr(0, at));
        if (at == std::string_view::npos) break;
        text.remove_prefix(at + 1);
    }
    return parts;
}

auto has_flag(std::string_view flags, std::string_view flag) -> bool {
    const auto all = split(flags, ',');
    return std::find(all.begin(), all.end(), flag) != all.end();
}

auto field(std::string_view text, std::string_view name) -> std::string {
    const auto at = text.find(std::string{name} + ":");
    if (at == std::string_view::npos) return {};
    auto value = text.substr(at + name.size() + 1);
    return std::string{value.substr(0, value.find_first_of("\r\n"))};
}

/// "slots 0-5460:7001 ... | roles 7001=master 7004>7001 ...": what must be equal everywhere.
auto summary(const node_report& report, const std::set<std::uint16_t>& running) -> std::string {
    std::map<std::string, std::uint16_t> port_of;
    for (const auto& e : report.view) port_of[e.id] = e.port;
    std::vector<std::tuple<int, int, std::uint16_t>> slots;
    for (const auto& e : report.view) {
        for (auto [first, last] : e.ranges) slots.emplace_back(first, last, e.port);
    }
    std::sort(slots.begin(), slots.end());
    std::ostringstream out;
    out << "slots";
    for (auto [first, last, port] : slots) out << ' ' << first << '-' << last << ':' << port;
    out << " | roles";
    std::map<std::uint16_t, std::string> roles;
    for (const auto& e : report.view) {
        if (!running.contains(e.port)) continue;
        roles[e.port] =
            e.master ? std::string{"=master"} : ">" + std::to_string(port_of[e.master_id]);
    }
    for (const auto& [port, role] : roles) out << ' ' << port << role;
    return out.str();
}

}  // namespace

auto parse_cluster_nodes(std::string_view text) -> std::vector<cluster_view_entry> {
    std::vector<cluster_view_entry> entries;
    for (auto line : split(text, '\n')) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const auto fields = split(line, ' ');
        if (fields.size() < 8) continue;
        cluster_view_entry e;
        e.id = std::string{fields[0]};
        // ip:port@cport[,hostname]
        const auto address = fields[1];
        const auto colon = address.rfind(':', address.find('@'));
        if (colon != std::string_view::npos) {
            e.port = static_cast<std::uint16_t>(
                std::atoi(std::string{address.substr(colon + 1)}.c_str()));
        }
        const auto flags = fields[2];
        e.myself = has_flag(flags, "myself");
        e.master = has_flag(flags, "master");
        e.failed = has_flag(flags, "fail");
        e.unsettled = has_flag(flags, "handshake") || has_flag(flags, "noaddr");
        if (fields[3] != "-") e.master_id = std::string{fields[3]};
        for (std::size_t i = 8; i < fields.size(); ++i) {
            const auto slot = fields[i];
            if (slot.starts_with('[')) continue;  // [slot->-id] or [slot-<-id]: a migration
            const auto dash = slot.find('-');
            const int first = std::atoi(std::string{slot.substr(0, dash)}.c_str());
            const int last = dash == std::string_view::npos
                                 ? first
                                 : std::atoi(std::string{slot.substr(dash + 1)}.c_str());
            e.ranges.emplace_back(first, last);
        }
        entries.push_back(std::move(e));
    }
    return entries;
}

auto owner_of(const std::vector<cluster_view_entry>& view, int slot) -> const cluster_view_entry* {
    for (const auto& e : view) {
        for (auto [first, last] : e.ranges) {
            if (first <= slot && slot <= last) return &e;
        }
    }
    return nullptr;
}

auto take_reports(const std::vector<redis_server>& nodes) -> std::vector<node_report> {
    std::vector<node_report> reports;
    for (const auto& node : nodes) {
        if (!node.running() || node.frozen()) continue;
        node_report r{
            .port = node.port(), .state = {}, .view = {}, .replica = false, .link_up = false};
        try {
            const auto info = node.command({"CLUSTER", "INFO"}).value_or("");
            r.state = field(info, "cluster_state");
            r.view = parse_cluster_nodes(node.command({"CLUSTER", "NODES"}).value_or(""));
            const auto replication = node.command({"INFO", "replication"}).value_or("");
            r.replica = field(replication, "role") == "slave";
            r.link_up = field(replication, "master_link_status") == "up";
        } catch (const std::runtime_error& e) {
            r.state = std::string{"unreachable: "} + e.what();
        }
        reports.push_back(std::move(r));
    }
    return reports;
}

auto unsettled_reason(const std::vector<node_report>& reports) -> std::string {
    if (reports.empty()) return "no node is running";
    std::set<std::uint16_t> running;
    for (const auto& r : reports) running.insert(r.port);
    std::string first_summary;
    for (const auto& r : reports) {
        const auto who = "node " + std::to_string(r.port);
        if (r.state != "ok") return who + " reports cluster_state:" + r.state;
        if (r.replica && !r.link_up) return who + " is a replica whose link is not up";
        std::set<std::uint16_t> known;
        int slots = 0;
        for (const auto& e : r.view) {
            if (e.myself && e.port != r.port)
                return who + " calls itself " + std::to_string(e.port);
            if (!running.contains(e.port)) continue;
            if (e.unsettled) return who + " is still meeting " + std::to_string(e.port);
            if (e.failed) return who + " flags running node " + std::to_string(e.port) + " fail";
            known.insert(e.port);
        }
        for (const auto& e : r.view) {
            for (auto [first, last] : e.ranges) {
                if (!running.contains(e.port)) {
                    return who + " has slots " + std::to_string(first) + "-" +
                           std::to_string(last) + " on stopped node " + std::to_string(e.port);
                }
                slots += last - first + 1;
            }
        }
        if (known != running) return who + " does not know every running node";
        if (slots != redlock::detail::cluster_slots)
            return who + " has " + std::to_string(slots) + " slots served";
        auto s = summary(r, running);
        if (first_summary.empty()) {
            first_summary = std::move(s);
        } else if (s != first_summary) {
            return who + " disagrees: " + s + " against " + first_summary;
        }
    }
    return {};
}

auto describe(const std::vector<node_report>& reports) -> std::string {
    std::set<std::uint16_t> running;
    for (const auto& r : reports) running.insert(r.port);
    std::string text;
    for (const auto& r : reports) {
        text += "\n  node " + std::to_string(r.port) + ": cluster_state:" + r.state;
        if (r.replica) text += r.link_up ? ", replica (link up)" : ", replica (link down)";
        text += ", " + summary(r, running);
    }
    return text;
}

}  // namespace redlock_test
