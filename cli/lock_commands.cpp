// acquire, release and extend: a lock held across invocations, named by its value.
#include "client_setup.hpp"
#include "commands.hpp"
#include "mistakes.hpp"

#include <algorithm>

namespace redlock::cli {
namespace {

/// "; 127.0.0.1:7001 refused; 127.0.0.1:7002 unreachable: connection refused"
auto describe_nodes(const std::vector<node_report>& nodes) -> std::string {
    std::string text;
    for (const auto& n : nodes) {
        if (n.status == node_status::ok) continue;
        text += "; " + n.node + " " + to_string(n.status);
        if (!n.detail.empty()) text += ": " + n.detail;
    }
    return text;
}

}  // namespace

auto acquire_command(const global_options& global, const lock_flags& flags, const reporter& out)
    -> int {
    auto locks = open_client(global, out, flags.wait_ms > 0);
    if (!locks) return out.fail(locks.error());

    auto held = locks->acquire(flags.resource, make_lock_options(flags));
    if (!held) return out.fail(held.error());

    const long long validity = held->remaining().count();
    json result{{"resource", held->resource()},
                {"value", held->value()},
                {"validity_ms", validity},
                {"fence", fence_json(*held)}};
    add_kind(result, *held);
    out.result(result, held->value() + "\n");
    std::string details = "acquired " + kind_phrase(*held) + "'" + held->resource() +
                          "', valid for " + format_ms(validity);
    if (const auto fence = held->fence()) details += ", fence " + std::to_string(*fence);
    out.note(details + "; release it with: redlock release --resource " +
             shell_quoted(held->resource()) + " --value " + shell_quoted(held->value()) +
             kind_flags(*held));
    // The client's destructor leaves the lock alone: it stays held until its
    // TTL ends or `redlock release` deletes it.
    return exit_ok;
}

auto release_command(const global_options& global, const value_options& args, const reporter& out)
    -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());

    const lock adopted = adopt_value(*locks, args);
    auto report = locks->release(adopted);
    if (!report) return out.fail(report.error());

    const std::size_t total = report->nodes.size();
    std::string tally = std::to_string(report->deleted) + " of " + std::to_string(total) + " nodes";
    // Decided without a slow node: its release is still on its way, and this
    // process waits for it (bounded by request_timeout) before it exits.
    if (report->pending > 0) tally += " (" + std::to_string(report->pending) + " still answering)";
    if (report->majority()) {
        const json result{{"released", report->deleted},
                          {"pending", report->pending},
                          {"kind", kind_name(adopted.kind())},
                          {"nodes", nodes_json(report->nodes)}};
        out.result(result, "released " + kind_phrase(adopted) + "'" + args.resource + "' on " +
                               tally + "\n");
        out.detail(report->nodes);
        return exit_ok;
    }
    const auto answered = static_cast<std::size_t>(
        std::count_if(report->nodes.begin(), report->nodes.end(), [](const node_report& n) {
            return n.status == node_status::ok || n.status == node_status::refused;
        }));
    failure_report failure;
    std::string hint;
    if (answered >= report->quorum) {
        // Held after all, as another kind than the flags say: name the flag.
        hint = wrong_kind_hint(*locks, args);
        failure = {exit_failure, "not_held",
                   "resource '" + args.resource + "' was not released: " + tally + " deleted it, " +
                       std::to_string(report->quorum) + " needed" +
                       (hint.empty() ? " (expired, or not held with this value)" : "; " + hint) +
                       describe_nodes(report->nodes)};
    } else {
        failure = {exit_unavailable, "quorum_unreachable",
                   "resource '" + args.resource + "': only " + std::to_string(answered) + " of " +
                       std::to_string(total) + " nodes answered the release, " +
                       std::to_string(report->quorum) + " needed" + describe_nodes(report->nodes)};
    }
    // One error object, its counts inside it: a script that sees "error" needs
    // look nowhere else, and no result fields pretend that this succeeded.
    json fields{{"released", report->deleted},
                {"pending", report->pending},
                {"kind", kind_name(adopted.kind())}};
    if (!hint.empty()) fields["hint"] = hint;
    return out.fail(failure, report->nodes, json::object(), fields);
}

auto extend_command(const global_options& global, const value_options& args, const reporter& out)
    -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());

    const lock adopted = adopt_value(*locks, args);
    auto validity = locks->extend(adopted, std::chrono::milliseconds{args.ttl_ms});
    if (!validity && validity.error().code == errc::not_held) {
        // Held after all, as another kind than the flags say: name the flag.
        if (const std::string hint = wrong_kind_hint(*locks, args); !hint.empty()) {
            failure_report failure = classify(validity.error());
            failure.message = "cannot extend '" + args.resource + "': " + hint;
            return out.fail(failure, validity.error().nodes, json::object(),
                            json{{"hint", hint}, {"kind", kind_name(adopted.kind())}});
        }
    }
    if (!validity) return out.fail(validity.error());

    out.result(json{{"validity_ms", validity->count()}, {"kind", kind_name(adopted.kind())}},
               "extended " + kind_phrase(adopted) + "'" + args.resource + "': valid for " +
                   format_ms(validity->count()) + "\n");
    return exit_ok;
}

}  // namespace redlock::cli
