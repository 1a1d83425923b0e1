// list: the locks a majority of nodes hold, then the leftovers that fewer hold
// (client::list). Read-only.
#include "client_setup.hpp"
#include "commands.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace redlock::cli {
namespace {

/// "writer", "reader", "permit 2 of 3" (or "permit 2" when no node keeps K).
auto listed_kind_text(const listed_lock& l) -> std::string {
    switch (l.kind) {
        case lock_kind::exclusive:
            return "writer";
        case lock_kind::shared:
            return "reader";
        case lock_kind::permit:
            break;
    }
    std::string text = "permit " + std::to_string(l.permit.value_or(0));
    if (l.permits) text += " of " + std::to_string(*l.permits);
    return text;
}

/// The holder text; the value only when it names nobody (a value from elsewhere).
auto listed_holder_text(const listed_lock& l) -> std::string {
    return l.holder.empty() ? "value " + l.value : l.holder;
}

auto listed_expiry_text(const listed_lock& l) -> std::string {
    return l.expires_in ? "expires in " + format_ms(l.expires_in->count()) : std::string{"no TTL"};
}

auto listed_json(const std::vector<listed_lock>& locks) -> json {
    json out = json::array();
    for (const auto& l : locks) {
        out.push_back(
            {{"resource", l.resource},
             {"kind", kind_name(l.kind)},
             {"value", l.value},
             {"holder", l.holder.empty() ? json(nullptr) : json(l.holder)},
             {"permit", or_null(l.permit)},
             {"permits", or_null(l.permits)},
             {"nodes", l.held_on.size()},
             {"held_on", l.held_on},
             {"expires_in_ms", l.expires_in ? json(l.expires_in->count()) : json(nullptr)},
             {"fence", or_null(l.fence)}});
    }
    return out;
}

}  // namespace

auto list_command(const global_options& global, const list_flags& args, const reporter& out)
    -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());

    list_options options;
    options.prefix = args.prefix;
    options.limit = static_cast<std::size_t>(args.limit);
    if (args.budget_ms) options.budget = std::chrono::milliseconds{*args.budget_ms};
    auto listing = locks->list(options);
    if (!listing) return out.fail(listing.error());

    const std::size_t total = listing->nodes.size();
    json nodes = json::array();
    for (const auto& n : listing->nodes) {
        nodes.push_back({{"node", n.node},
                         {"reachable", n.reachable},
                         {"complete", n.complete},
                         {"keys", n.keys},
                         {"rounds", n.rounds},
                         {"detail", n.detail}});
        out.detail(n.node + ": " + (n.reachable ? "" : "unreachable, ") + std::to_string(n.keys) +
                   " keys in " + std::to_string(n.rounds) + " SCAN rounds" +
                   (n.detail.empty() ? "" : " (" + n.detail + ")"));
    }
    const json result{
        {"quorum", listing->quorum},
        {"reachable", listing->reachable()},
        {"complete", listing->complete},
        {"truncated_reason",
         listing->truncated_reason.empty() ? json(nullptr) : json(listing->truncated_reason)},
        {"locks", listed_json(listing->locks)},
        {"leftovers", listed_json(listing->leftovers)},
        {"nodes", std::move(nodes)}};

    std::string text;
    const auto count = [](std::size_t n, const char* one, const char* many) {
        return std::to_string(n) + " " + (n == 1 ? one : many);
    };
    text += count(listing->locks.size(), "lock", "locks") + " held on a quorum (quorum " +
            std::to_string(listing->quorum) + " of " + std::to_string(total) + " nodes)" +
            (listing->locks.empty() ? "\n" : ":\n");
    for (const auto& l : listing->locks) {
        text += "  " + pad(l.resource, 24) + pad(listed_kind_text(l), 14) +
                pad(listed_holder_text(l), 30) + pad(listed_expiry_text(l), 22) +
                std::to_string(l.held_on.size()) + " of " + std::to_string(total) + " nodes" +
                (l.fence ? "  fence " + std::to_string(*l.fence) : std::string{}) + "\n";
    }
    if (!listing->leftovers.empty()) {
        text += count(listing->leftovers.size(), "leftover", "leftovers") +
                " held on fewer than a quorum (they expire by their TTL):\n";
        for (const auto& l : listing->leftovers) {
            text += "  " + pad(l.resource, 24) + pad(listed_kind_text(l), 14) +
                    pad(listed_holder_text(l), 30) + "held on " + std::to_string(l.held_on.size()) +
                    " of " + std::to_string(total) + " nodes, " + listed_expiry_text(l) + "\n";
        }
    }

    if (listing->reachable() < listing->quorum) {
        if (!out.json_mode()) out.result(result, text);
        return out.fail(failure_report{exit_unavailable, "quorum_unreachable",
                                       "list: only " + std::to_string(listing->reachable()) +
                                           " of " + std::to_string(total) + " nodes answered, " +
                                           std::to_string(listing->quorum) +
                                           " needed to tell which locks a majority hold"},
                        {}, result);
    }
    out.result(result, text);
    if (!listing->complete) out.note("the listing was cut short: " + listing->truncated_reason);
    return exit_ok;
}

}  // namespace redlock::cli
