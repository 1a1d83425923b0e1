// What an acquisition says about its arguments before it starts, and about
// its failure (and its latency, for the metrics) once it ends.
#include "operations/acquire_op.hpp"
#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/scripts.hpp"
#include "sansio/timing.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

auto acquire_op::check_arguments(const lock_options& options) const -> std::string {
    const client_config& config = ctx_.config();
    const acquire_settings& s = decision_.settings();
    if (state_->resources.empty()) return "no resource to lock";
    for (const auto& r : state_->resources) {
        if (r.empty()) return "a resource name is empty";
    }
    if (state_->resources.size() > 1) {
        std::set<std::string_view> seen;
        for (const auto& r : state_->resources) {
            if (!seen.insert(r).second) return "resource '" + r + "' is named twice";
        }
    }
    if (state_->ttl <= milliseconds{0}) return "ttl must be greater than 0 ms";
    if (state_->ttl > max_ttl) return "ttl must be at most 2147483647 ms";
    if (s.max_attempts < 0) return "attempts must be at least 1";
    if (options.max_wait && *options.max_wait < milliseconds{0})
        return "max_wait must not be negative";
    if (s.fencing && state_->resources.size() > 1) {
        return "fencing tokens are available for a single resource only";
    }
    if (options.owner && options.owner->empty())
        return "owner must not be empty (unset it instead)";
    if (options.permits) {
        if (*options.permits < 1 || *options.permits > max_permits)
            return "permits must be between 1 and " + std::to_string(max_permits);
        if (options.shared.value_or(false)) return "a lock is either shared or a permit, not both";
        if (options.fencing.value_or(false))
            return "fencing tokens mean nothing for permits (several hold at once)";
    }
    if (state_->kind != lock_kind::exclusive && state_->resources.size() > 1) {
        return state_->kind == lock_kind::shared ? "a shared lock covers a single resource"
                                                 : "a semaphore's permit covers a single resource";
    }
    if (read_fence_ && (config.key_prefix.starts_with(config.fence_prefix) ||
                        config.fence_prefix.starts_with(config.key_prefix))) {
        return "fencing needs a fence_prefix and a key_prefix that do not start with each other";
    }
    if (s.fencing && (config.key_prefix.starts_with(config.fence_prefix) ||
                      config.fence_prefix.starts_with(config.key_prefix))) {
        return "fencing needs a fence_prefix and a key_prefix that do not start with each other";
    }
    return {};
}

void acquire_op::note_held_resource(const reply_event& event) {
    // Only acquire_source's refusal {0, counter, index} names a resource.
    if (state_->resources.size() < 2 || wait_ || state_->kind != lock_kind::exclusive ||
        event.status != request_status::reply)
        return;
    if (array_integer(event.answer, 0) != 0) return;
    const auto index = array_integer(event.answer, 2);
    if (index && *index >= 0 && *index < 64 &&
        static_cast<std::size_t>(*index) < state_->resources.size())
        held_resources_ |= std::uint64_t{1} << *index;
}

auto acquire_op::held_phrase() const -> std::string {
    // ": 'b' is held by another owner", or for several, each one named.
    std::string names;
    std::size_t count = 0;
    for (std::size_t i = 0; i < state_->resources.size() && i < 64; ++i) {
        if ((held_resources_ >> i & 1U) == 0) continue;
        names += (count++ == 0 ? "'" : ", '") + state_->resources[i] + "'";
    }
    if (count == 0) return ": one of them is held by another owner";
    return ": " + names + (count == 1 ? " is held by another owner" : " are held by other owners");
}

auto acquire_op::describe_failure(errc reason) const -> std::string {
    const bool several = state_->resources.size() > 1;
    std::string what;
    switch (reason) {
        case errc::contended:
            what = state_->kind == lock_kind::permit
                       ? "has no free permit (all " + std::to_string(state_->permits) + " held)"
                   : state_->kind == lock_kind::shared
                       ? "is held by a writer, or a writer is queued for it"
                   : several ? held_phrase()
                             : "is held by another owner";
            break;
        case errc::invalid_argument:
            what = "could not be locked: the nodes disagree with this call's arguments";
            break;
        case errc::quorum_unreachable:
            what = "could not be locked: a majority of nodes did not answer";
            break;
        case errc::validity_expired:
            what = std::string{several ? "were" : "was"} +
                   " granted too late: no validity left after elapsed time and clock drift";
            break;
        case errc::cancelled:
            what = std::string{several ? "were" : "was"} +
                   " not locked: the acquisition was cancelled";
            break;
        case errc::client_stopped:
            what = std::string{several ? "were" : "was"} + " not locked: the client was shut down";
            break;
        default:
            what = "could not be locked";
            break;
    }
    const std::size_t n = ctx_.node_count();
    const std::size_t attempts = decision_.attempt();
    std::string names = "'" + state_->resources.front() + "'";
    for (std::size_t i = 1; i < state_->resources.size(); ++i)
        names += ", '" + state_->resources[i] + "'";
    std::string message =
        (several ? "resources " : "resource ") + names + (what.starts_with(':') ? "" : " ") + what +
        " (" + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") +
        "; last attempt: " + std::to_string(decision_.nodes().count(node_status::ok)) + " of " +
        std::to_string(n) + " nodes " +
        (decision_.settings().fencing ? "granted or confirmed, " : "granted, ") +
        std::to_string(quorum(n)) + " needed";
    decision_.nodes().append_problems(message,
                                      [this](std::size_t i) { return ctx_.node(i).name(); });
    message += ")";
    return message;
}

void acquire_op::record_latency(acquire_outcome outcome, steady_clock::time_point end) noexcept {
    if (started_ == steady_clock::time_point{}) return;  // never started: nothing to time
    const auto took = end - started_;
    auto& latency = ctx_.counters().latency;
    latency.acquire[static_cast<std::size_t>(outcome)].record(took);
    // Refused at its first attempt: it waited (or polled) for the holder.
    if (decision_.attempt() > 1) latency.wait.record(took);
}

}  // namespace redlock::detail
