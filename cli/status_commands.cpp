// status: read-only views of one lock on every node. A lock shows its writer
// (the exclusive holder) and its readers; `status --permits K` a semaphore's
// permit holders.
#include "client_setup.hpp"
#include "commands.hpp"
#include "mistakes.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {
namespace {

auto ttl_json(const std::optional<std::chrono::milliseconds>& ttl) -> json {
    return ttl ? json(ttl->count()) : json(nullptr);
}

auto ttl_text(const std::optional<std::chrono::milliseconds>& ttl) -> std::string {
    return ttl ? "  ttl " + format_ms(ttl->count()) : std::string{};
}

/// The holder text a value carries (lock::holder), or null without one.
auto name_json(std::string_view value) -> json {
    const std::string_view name = holder_of(value);
    return name.empty() ? json(nullptr) : json(std::string{name});
}

/// "readers a1b2 ttl 1990 ms, c3d4 ttl 2990 ms"
auto readers_text(const node_lock_state& n) -> std::string {
    // The marker outlives no live reader, but a node restarted from an old
    // snapshot or a hand-made key can show it alone: say so rather than "free".
    if (n.readers.empty()) return "readers' marker, no live reader";
    std::string text = "readers ";
    for (std::size_t i = 0; i < n.readers.size(); ++i) {
        if (i > 0) text += ", ";
        text += n.readers[i].value;
        if (n.readers[i].ttl) text += " ttl " + format_ms(n.readers[i].ttl->count());
    }
    return text;
}

/// What a node's answer tells of the lock. A member that answered only errors
/// given before any key is read (a cluster without a majority of its masters:
/// CLUSTERDOWN) cannot say whether it holds the lock: "unknown", never "free",
/// and it counts as not answered.
enum class node_view { unreachable, unknown, known };

/// Errors a node gives instead of running a command: the key was not read.
constexpr std::array<std::string_view, 8> unread_errors{
    "CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK", "LOADING", "MASTERDOWN", "BUSY", "NOAUTH"};

auto lower(std::string_view text) -> std::string {
    std::string out{text};
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

auto view_of(const node_lock_state& n) -> node_view {
    if (!n.reachable) return node_view::unreachable;
    // Something of the lock was read: the key, its TTL, the fence, the readers.
    if (n.detail.empty() || n.holder || n.shared || n.ttl || n.fence || !n.readers.empty())
        return node_view::known;
    const std::string_view code = std::string_view{n.detail}.substr(0, n.detail.find(' '));
    if (std::find(unread_errors.begin(), unread_errors.end(), code) != unread_errors.end())
        return node_view::unknown;
    // The readers are listed by a script, the last command: an error only it can give
    // (scripting refused or disabled) leaves the lock key's answer standing.
    const std::string text = lower(n.detail);
    if (text.find("script") != std::string::npos || text.find("'eval'") != std::string::npos)
        return node_view::known;
    return node_view::unknown;
}

/// The state a node's line and JSON give: held, shared, free, unknown or unreachable.
auto state_of(const node_lock_state& n) -> std::string {
    switch (view_of(n)) {
        case node_view::unreachable:
            return "unreachable";
        case node_view::unknown:
            return "unknown";
        case node_view::known:
            break;
    }
    if (n.holder) return "held";
    return n.shared || !n.readers.empty() ? "shared" : "free";
}

/// The width of the node column: the longest name (a member's can be long) and a gap.
template <class Nodes>
auto name_width(const Nodes& nodes) -> std::size_t {
    std::size_t width = 22;
    for (const auto& n : nodes) width = std::max(width, n.node.size() + 2);
    return width;
}

/// Fewer than a quorum answered: nobody can tell who holds the lock. The
/// table still goes to stdout in human mode; exit 69.
auto too_few_answered(const reporter& out, const json& result, const std::string& table,
                      const std::string& what, std::size_t reachable, std::size_t total,
                      std::size_t quorum) -> int {
    if (!out.json_mode()) out.result(result, table);
    return out.fail(failure_report{exit_unavailable, "quorum_unreachable",
                                   what + ": only " + std::to_string(reachable) + " of " +
                                       std::to_string(total) + " nodes answered, " +
                                       std::to_string(quorum) + " needed to tell who holds it"},
                    {}, result);
}

/// A semaphore's permit holders (status --permits K, and status when the nodes
/// keep K for the resource). `found`: K was read from the nodes, not given.
auto semaphore_view(client& locks, const std::string& resource, int permits, bool found,
                    const reporter& out) -> int;

}  // namespace

auto status_command(const global_options& global, const status_options& args, const reporter& out)
    -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());

    auto status = locks->status(args.resource);
    if (!status) return out.fail(status.error());

    std::size_t reachable = 0;
    std::size_t answered = 0;  // reachable, and able to say whether it holds the lock
    std::size_t agreeing = 0;
    bool held_somewhere = false;
    json nodes = json::array();
    std::string table;
    const std::size_t width = name_width(status->nodes);
    for (const auto& n : status->nodes) {
        reachable += n.reachable ? 1 : 0;
        const std::string state = state_of(n);
        answered += n.reachable && state != "unknown" ? 1 : 0;
        if (n.holder && n.holder == status->majority_holder) ++agreeing;
        held_somewhere = held_somewhere || n.holder || n.shared || !n.readers.empty();
        json readers = json::array();
        for (const auto& r : n.readers) {
            readers.push_back({{"value", r.value},
                               {"holder_name", name_json(r.value)},
                               {"ttl_ms", ttl_json(r.ttl)}});
        }
        nodes.push_back({{"node", n.node},
                         {"reachable", n.reachable},
                         {"state", state},
                         {"holder", or_null(n.holder)},
                         {"holder_name", n.holder ? name_json(*n.holder) : json(nullptr)},
                         {"ttl_ms", ttl_json(n.ttl)},
                         {"fence", or_null(n.fence)},
                         {"shared", n.shared},
                         {"readers", std::move(readers)},
                         {"detail", n.detail}});
        std::string line = "  " + pad(n.node, width);
        if (!n.reachable) {
            line += "unreachable: " + n.detail;
        } else if (state == "unknown") {
            line += "unknown: " + n.detail + " (it answered, but not whether it holds the lock)";
        } else {
            if (n.holder) {
                line += "holder " + *n.holder + ttl_text(n.ttl);
            } else if (n.shared || !n.readers.empty()) {
                line += readers_text(n);
            } else {
                line += "free";
            }
            if (n.fence) line += "  fence " + std::to_string(*n.fence);
            if (!n.detail.empty()) line += "  (" + n.detail + ")";
        }
        table += line + "\n";
    }
    const bool agreed = status->majority_holder.has_value();
    json result{{"resource", status->resource},
                {"quorum", status->quorum},
                {"reachable", reachable},
                {"answered", answered},
                {"holder", or_null(status->majority_holder)},
                {"holder_name", agreed ? name_json(*status->majority_holder) : json(nullptr)},
                {"agreed", agreed},
                {"shared", status->shared()},
                {"readers", status->majority_readers},
                {"fence", or_null(status->fence)},
                {"nodes", std::move(nodes)}};

    if (answered < status->quorum) {
        return too_few_answered(out, result, table, "resource '" + args.resource + "'", answered,
                                status->nodes.size(), status->quorum);
    }
    std::string headline = "resource '" + status->resource + "': ";
    if (agreed) {
        headline += "held by " + named_value(*status->majority_holder) + " (" +
                    std::to_string(agreeing) + " of " + std::to_string(status->nodes.size()) +
                    " nodes agree, quorum " + std::to_string(status->quorum) + ")";
    } else if (status->shared()) {
        const auto& readers = status->majority_readers;
        headline += "shared by " + std::to_string(readers.size()) +
                    (readers.size() == 1 ? " reader" : " readers") +
                    " (each alive on a quorum of " + std::to_string(status->quorum) +
                    " or more nodes): ";
        for (std::size_t i = 0; i < readers.size(); ++i)
            headline += (i > 0 ? ", " : "") + named_value(readers[i]);
    } else if (held_somewhere) {
        headline += "no majority agrees on a holder or a reader (quorum " +
                    std::to_string(status->quorum) + ")";
    } else if (const auto permits = known_permits(*locks, args.resource)) {
        // No writer, no reader: a semaphore's permits may hold it.
        return semaphore_view(*locks, args.resource, *permits, true, out);
    } else {
        headline += answered < status->nodes.size()
                        ? "free: none of the " + std::to_string(answered) +
                              " nodes that answered "
                              "holds it"
                        : std::string{"free: no node holds it"};
    }
    if (status->fence) headline += ", fence counter " + std::to_string(*status->fence);
    out.result(result, headline + "\n" + table);
    return exit_ok;
}

auto semaphore_status_command(const global_options& global, const status_options& args,
                              const reporter& out) -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());
    return semaphore_view(*locks, args.resource, args.permits.value_or(1), false, out);
}

namespace {

auto semaphore_view(client& locks, const std::string& resource, int permits, bool found,
                    const reporter& out) -> int {
    auto status = locks.status(resource, permits);
    if (!status) return out.fail(status.error());

    // The nodes first, once: the unreachable ones, and those that know this
    // semaphore with another count (they refuse every acquisition naming ours).
    std::size_t reachable = 0;
    std::size_t answered = 0;  // the permits script ran: any error means it did not
    json nodes = json::array();
    std::string node_lines;
    const std::size_t width = name_width(status->nodes);
    for (const auto& n : status->nodes) {
        reachable += n.reachable ? 1 : 0;
        const bool known = n.reachable && (n.detail.empty() || n.permits.has_value());
        answered += known ? 1 : 0;
        nodes.push_back({{"node", n.node},
                         {"reachable", n.reachable},
                         {"state", !n.reachable ? "unreachable"
                                   : known      ? "known"
                                                : "unknown"},
                         {"permits", or_null(n.permits)},
                         {"detail", n.detail}});
        const std::string name = "  " + pad(n.node, width);
        if (!n.reachable) {
            node_lines += name + "unreachable: " + n.detail + "\n";
        } else if (!known) {
            node_lines +=
                name + "unknown: " + n.detail + " (it answered, but not which permits it holds)\n";
        } else if (n.permits && *n.permits != permits) {
            node_lines += name + "knows this semaphore with " + std::to_string(*n.permits) +
                          " permits, not " + std::to_string(permits) +
                          ": it refuses acquisitions naming " + std::to_string(permits) + "\n";
        } else if (!n.detail.empty()) {
            node_lines += name + "(" + n.detail + ")\n";
        }
    }

    // Then each permit held anywhere, with every reachable node's view of it.
    json holders = json::array();
    std::string table;
    for (const auto& p : status->permit_holders) {
        if (!p.held_anywhere()) continue;
        json views = json::array();
        std::size_t agreeing = 0;
        std::string block;
        for (std::size_t j = 0; j < p.nodes.size() && j < status->nodes.size(); ++j) {
            const auto& view = p.nodes[j];
            const auto& n = status->nodes[j];
            if (!n.reachable || (!n.detail.empty() && !n.permits)) continue;  // listed above
            views.push_back({{"node", n.node},
                             {"holder", or_null(view.holder)},
                             {"ttl_ms", ttl_json(view.ttl)}});
            if (view.holder && view.holder == p.majority_holder) ++agreeing;
            block += "    " + pad(n.node, width) +
                     (view.holder ? *view.holder + ttl_text(view.ttl) : std::string{"free"}) + "\n";
        }
        holders.push_back(
            {{"permit", p.permit},
             {"holder", or_null(p.majority_holder)},
             {"holder_name", p.majority_holder ? name_json(*p.majority_holder) : json(nullptr)},
             {"agreed", p.majority_holder.has_value()},
             {"nodes", std::move(views)}});
        table += "  permit " + std::to_string(p.permit) + ": " +
                 (p.majority_holder ? "held by " + named_value(*p.majority_holder) + " (" +
                                          std::to_string(agreeing) + " of " +
                                          std::to_string(status->nodes.size()) + " nodes agree)"
                                    : std::string{"no majority agrees on a holder"}) +
                 "\n" + block;
    }
    json result{{"resource", status->resource},  {"permits", permits},
                {"quorum", status->quorum},      {"reachable", reachable},
                {"answered", answered},          {"held", status->held()},
                {"holders", std::move(holders)}, {"nodes", std::move(nodes)}};
    if (found) result["permits_from_nodes"] = true;

    if (answered < status->quorum) {
        return too_few_answered(out, result, node_lines + table, "semaphore '" + resource + "'",
                                answered, status->nodes.size(), status->quorum);
    }
    std::string headline =
        "semaphore '" + status->resource + "': " + std::to_string(status->held()) + " of " +
        std::to_string(permits) + " permits held (quorum " + std::to_string(status->quorum) + ")";
    if (found) {
        headline += "; no writer or reader holds it, and the nodes keep it as a semaphore of " +
                    std::to_string(permits) + " permits";
    }
    out.result(result, headline + "\n" + node_lines + table);
    return exit_ok;
}

}  // namespace

}  // namespace redlock::cli
