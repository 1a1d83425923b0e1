#include "client/holder_naming.hpp"

#include "client/diagnostics_parse.hpp"
#include "client/operator_commands.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "redlock/lock.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/timing.hpp"
#include "transport/callback_guard.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>

namespace redlock::detail {
namespace {

/// "12.3 s", or "840 ms" under a second.
auto time_left(std::chrono::milliseconds ms) -> std::string {
    if (ms.count() < 1000) return std::to_string(ms.count()) + " ms";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
    return text;
}

auto name_of(std::string_view value) -> std::string {
    const std::string_view holder = holder_of(value);
    return holder.empty() ? std::string{"a holder with no name"} : std::string{holder};
}

}  // namespace

auto describe_holder(const lock_status& seen) -> std::optional<holder_description> {
    // The writer's value on the most nodes, and its longest TTL there.
    std::map<std::string_view, std::pair<std::size_t, std::chrono::milliseconds>> writers;
    for (const auto& n : seen.nodes) {
        if (!n.reachable || !n.holder) continue;
        auto& [count, longest] = writers[*n.holder];
        ++count;
        longest = std::max(longest, n.ttl.value_or(std::chrono::milliseconds{0}));
    }
    const auto most = std::max_element(writers.begin(), writers.end(), [](auto& a, auto& b) {
        return a.second.first < b.second.first;
    });
    if (most != writers.end()) {
        return holder_description{name_of(most->first) + ", " + time_left(most->second.second) +
                                      " left, on " + std::to_string(most->second.first) + " of " +
                                      std::to_string(seen.nodes.size()) + " nodes",
                                  true};
    }
    if (seen.majority_readers.empty()) return std::nullopt;
    std::string names;
    for (std::size_t i = 0; i < seen.majority_readers.size() && i < 3; ++i)
        names += (i == 0 ? "" : ", ") + name_of(seen.majority_readers[i]);
    if (seen.majority_readers.size() > 3) names += ", ...";
    const std::size_t n = seen.majority_readers.size();
    return holder_description{
        std::to_string(n) + (n == 1 ? " reader (" : " readers (") + names + ")", false};
}

void name_holder_in(std::string& message, const lock_status& seen) {
    const auto who = describe_holder(seen);
    if (!who) return;
    constexpr std::string_view another = "is held by another owner";
    constexpr std::string_view writer = "is held by a writer, or a writer is queued for it";
    if (const auto at = message.find(writer); at != std::string::npos) {
        // A reader refused: name a writer only (readers do not refuse it).
        if (who->writer) message.replace(at, writer.size(), "is held by a writer, " + who->text);
    } else if (const auto at2 = message.find(another); at2 != std::string::npos) {
        message.replace(at2, another.size(), "is held by " + who->text);
    }
}

auto naming_probe(op_context& ctx, std::string resource, error failed,
                  client::acquire_callback done, std::function<void()> then)
    -> std::unique_ptr<probe_op> {
    auto commands = status_commands(ctx.config(), resource);
    const std::uint16_t slot = resource_slot(resource);
    const std::size_t needed = quorum(ctx.node_count());
    auto answered = [resource = std::move(resource), needed, failed = std::move(failed),
                     done = std::move(done),
                     then = std::move(then)](std::vector<node_probe> probes) mutable {
        name_holder_in(failed.message, parse_status(resource, needed, std::move(probes)));
        call_guarded([&] { done(result<lock>{failure{std::move(failed)}}); });
        then();
    };
    return std::make_unique<probe_op>(ctx, std::move(commands), std::move(answered), slot);
}

auto loss_cause_probe(op_context& ctx, const lock_state& state, error why,
                      std::function<void(error)> then) -> std::unique_ptr<probe_op> {
    const std::string& resource = state.resources.front();
    auto answered = [why = std::move(why),
                     then = std::move(then)](std::vector<node_probe> probes) mutable {
        if (const std::string cause = parse_tombstone(probes); !cause.empty())
            why.message = cause + "; " + why.message;
        then(std::move(why));
    };
    return std::make_unique<probe_op>(ctx, tombstone_commands(ctx.config(), resource, state.value),
                                      std::move(answered), resource_slot(resource));
}

}  // namespace redlock::detail
