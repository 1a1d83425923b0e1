#include "operations/acquire_checks.hpp"

#include "operations/holder_text.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "operations/session_state.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/timing.hpp"

#include <functional>
#include <map>
#include <string_view>
#include <utility>

namespace redlock::detail {

using std::chrono::milliseconds;

void discount_quarantined(const node_port& node, std::uint16_t slot, node_outcome& outcome,
                          std::chrono::steady_clock::time_point now) {
    if (outcome.status != node_status::ok) return;
    const auto until = node.quarantined_until(slot);
    if (now >= until) return;
    // It said yes, but it restarted without persisting every write, or its clock
    // stepped, and may have forgotten a lock another client holds: its yes is not
    // counted (the key it set is released with the rest if the attempt fails).
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now);
    outcome = {node_status::error, node.quarantine_cause(slot) + "; its grants count again in " +
                                       std::to_string(left.count()) + " ms"};
}

void note_missed_grants(const op_context& ctx, const node_outcomes& nodes) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const node_status s = nodes.status(i);
        if (s == node_status::error || s == node_status::timeout || s == node_status::unreachable)
            ctx.node(i).missed_grant(ctx.config(), nodes.detail(i));
    }
}

auto settings_of(const client_config& config, std::size_t resources, const lock_options& options)
    -> acquire_settings {
    acquire_settings s;
    s.nodes = config.member_count();
    // A reader reads the fence counter in its grant; only a writer raises it.
    s.fencing = options.fencing.value_or(config.lock.fencing) && !options.shared.value_or(false) &&
                !options.permits;
    s.permits = options.permits.value_or(0);
    s.mode = options.wait.value_or(config.lock.wait);
    // A lock in a session takes the session's TTL (its renewals ask for it).
    const auto& session = options.session;
    s.ttl = session && !session->empty() ? session->ttl() : options.ttl.value_or(config.lock.ttl);
    s.min_validity = config.lock.min_validity;
    s.drift_factor = config.clock_drift_factor;
    s.drift_floor = config.clock_drift_floor;
    s.retry = config.retry;
    s.waiter_ttl = config.lock.waiter_ttl;
    s.request_timeout = config.request_timeout;
    // A cluster member's first lock: the seed's connection and map, then the master's
    // connection and the grant (acquire_settling.cpp).
    s.settle_limit = 2 * (config.connect_timeout + config.request_timeout);
    s.max_wait = options.max_wait;  // the decision counts it from its start
    // With only a wait deadline, keep trying until it passes.
    s.max_attempts = options.attempts.value_or(options.max_wait ? 0 : config.retry.attempts);
    // Queue and notifications serve a single resource that may be retried.
    // Acquisitions given a wait deadline wait for the holder: sleeping until
    // its key could expire, woken early by its release. With an attempt
    // budget alone they retry after retry.delay + jitter, as asked.
    s.waiting = options.max_wait.has_value() && resources == 1 && s.mode != wait_mode::poll;
    // A release hands an exclusive, unfenced lock to the waiter first in line
    // (README, "The hand-off"), where that waiter left an offer.
    s.offers = s.waiting && !s.fencing && s.permits == 0 && !options.shared.value_or(false) &&
               s.mode != wait_mode::broadcast;
    return s;
}

auto reads_fence(const client_config& config, const lock_options& options) -> bool {
    return !options.permits && options.shared.value_or(false) &&
           options.fencing.value_or(config.lock.fencing);
}

auto lock_state_of(const client_config& config, std::vector<std::string> resources,
                   lock_options& options, const acquire_settings& settings,
                   std::shared_ptr<const std::string> proclamation) -> std::shared_ptr<lock_state> {
    auto state = std::make_shared<lock_state>();
    state->proclamation = std::move(proclamation);
    state->resources = std::move(resources);
    state->ttl = settings.ttl;
    state->delay = options.lock_delay.value_or(config.lock.lock_delay);
    if (options.permits) {
        state->kind = lock_kind::permit;
        state->permits = *options.permits;
    } else if (options.shared.value_or(false)) {
        state->kind = lock_kind::shared;
    }
    if (options.owner) state->owner = *options.owner;
    state->value = value_template(options.holder ? *options.holder : default_holder());
    state->auto_renew = options.auto_renew.value_or(config.lock.auto_renew);
    if (options.session && !options.session->empty()) {
        state->session = options.session->state();
        state->auto_renew = true;  // by the session's renewals
    }
    if (state->auto_renew) state->lost_source = std::stop_source{};
    if (options.on_lost) {
        state->on_lost = std::make_unique<std::function<void(const lock&, const error&)>>(
            std::move(options.on_lost));
    }
    if (options.on_shrunk) {
        state->on_shrunk = std::make_unique<std::function<void(const lock&, const shrink_report&)>>(
            std::move(options.on_shrunk));
    }
    state->wake = settings.mode == wait_mode::broadcast ? 'a'
                  : settings.mode == wait_mode::poll    ? '0'
                                                        : '1';
    return state;
}

auto resource_problem(std::string_view resource) -> std::string {
    if (resource.empty()) return "a resource name is empty";
    if (!taggable(resource)) {
        // "{" + "}x" + "}" holds an empty tag, which Redis ignores: the lock's
        // keys would not share a slot.
        return "resource '" + std::string{resource} +
               "' begins with '}' and has no hash tag of its own (a non-empty '{...}'): its "
               "keys could not share one hash slot";
    }
    return {};
}

auto argument_problem(const client_config& config, const acquire_settings& s,
                      const lock_state& lock, const lock_options& options) -> std::string {
    if (lock.resources.empty()) return "no resource to lock";
    for (const auto& r : lock.resources) {
        if (auto problem = resource_problem(r); !problem.empty()) return problem;
    }
    if (lock.resources.size() > 1) {
        // "x" and "{x}" have the same keys: the same lock, named twice.
        std::map<std::string, std::string_view> seen;
        for (const auto& r : lock.resources) {
            const auto [it, fresh] = seen.emplace(tagged_resource(r), r);
            if (fresh) continue;
            if (it->second == r) return "resource '" + r + "' is named twice";
            return "resources '" + std::string{it->second} + "' and '" + r +
                   "' name the same lock (the same keys)";
        }
        // A cluster member runs a lock's script on one node: every key in one slot.
        if (!config.clusters.empty()) {
            const std::string& first = lock.resources.front();
            for (const auto& r : lock.resources) {
                if (resource_slot(r) == resource_slot(first)) continue;
                return "resources '" + first + "' and '" + r + "' hash to different slots (" +
                       std::to_string(resource_slot(first)) + " and " +
                       std::to_string(resource_slot(r)) +
                       "), and a cluster member runs one lock on one slot: give them a shared "
                       "hash tag, e.g. '{" +
                       first + "}:a' and '{" + first + "}:b'";
            }
        }
    }
    if (lock.ttl <= milliseconds{0}) return "ttl must be greater than 0 ms";
    if (lock.ttl > max_ttl) return "ttl must be at most 2147483647 ms";
    if (lock.delay < milliseconds{0}) return "lock_delay must not be negative";
    if (lock.node_ttl() > max_ttl) return "ttl + lock_delay must be at most 2147483647 ms";
    if (s.max_attempts < 0) return "attempts must be at least 1";
    if (options.max_wait && *options.max_wait < milliseconds{0})
        return "max_wait must not be negative";
    if (s.fencing && lock.resources.size() > 1) {
        return "fencing tokens are available for a single resource only";
    }
    if (options.owner && options.owner->empty())
        return "owner must not be empty (unset it instead)";
    if (options.holder) {
        if (auto problem = holder_problem(*options.holder); !problem.empty()) return problem;
    }
    if (options.permits) {
        if (*options.permits < 1 || *options.permits > max_permits)
            return "permits must be between 1 and " + std::to_string(max_permits);
        if (options.shared.value_or(false)) return "a lock is either shared or a permit, not both";
        if (options.fencing.value_or(false))
            return "fencing tokens mean nothing for permits (several hold at once)";
    }
    if (lock.kind != lock_kind::exclusive && lock.resources.size() > 1) {
        return lock.kind == lock_kind::shared ? "a shared lock covers a single resource"
                                              : "a semaphore's permit covers a single resource";
    }
    if (options.session) {
        if (auto problem = session_problem(config, lock, options); !problem.empty()) return problem;
    }
    if ((s.fencing || reads_fence(config, options)) &&
        (config.key_prefix.starts_with(config.fence_prefix) ||
         config.fence_prefix.starts_with(config.key_prefix))) {
        return "fencing needs a fence_prefix and a key_prefix that do not start with each other";
    }
    return {};
}

auto session_problem(const client_config& config, const lock_state& lock,
                     const lock_options& options) -> std::string {
    const session& in = *options.session;
    if (in.empty()) return "session is an empty handle (open one with client::open_session)";
    if (!config.clusters.empty())
        return "sessions do not support cluster members (config.clusters)";
    if (lock.kind != lock_kind::exclusive)
        return "a session holds exclusive locks only, not a reader or a permit";
    if (lock.delay != milliseconds{0})
        return "a lock in a session has no lock-delay (set lock_delay to 0)";
    if (options.ttl && *options.ttl != in.ttl()) {
        return "a lock in session " + in.id() + " takes its TTL (" +
               std::to_string(in.ttl().count()) + " ms), not ttl " +
               std::to_string(options.ttl->count()) + " ms";
    }
    if (options.auto_renew && !*options.auto_renew)
        return "a lock in a session is renewed by it: auto_renew cannot be false";
    if (in.lost()) return "session " + in.id() + " was lost";
    if (in.closed()) return "session " + in.id() + " was closed";
    return {};
}

namespace {

/// ": 'b' is held by another owner", or for several, each one named.
auto held_phrase(const lock_state& lock, held_resources held) -> std::string {
    std::string names;
    std::size_t count = 0;
    for (std::size_t i = 0; i < lock.resources.size() && i < 64; ++i) {
        if ((held.bits >> i & 1U) == 0) continue;
        names += (count++ == 0 ? "'" : ", '") + lock.resources[i] + "'";
    }
    if (count == 0) return ": one of them is held by another owner";
    return ": " + names + (count == 1 ? " is held by another owner" : " are held by other owners");
}

auto what_failed(const lock_state& lock, held_resources held, errc reason) -> std::string {
    const bool several = lock.resources.size() > 1;
    switch (reason) {
        case errc::contended:
            return lock.kind == lock_kind::permit
                       ? "has no free permit (all " + std::to_string(lock.permits) + " held)"
                   : lock.kind == lock_kind::shared
                       ? "is held by a writer, or a writer is queued for it"
                   : several ? held_phrase(lock, held)
                             : "is held by another owner";
        case errc::invalid_argument:
            return "could not be locked: the nodes disagree with this call's arguments";
        case errc::quorum_unreachable:
            return "could not be locked: a majority of nodes did not answer";
        case errc::validity_expired:
            return std::string{several ? "were" : "was"} +
                   " granted too late: no validity left after elapsed time and clock drift";
        case errc::cancelled:
            return std::string{several ? "were" : "was"} +
                   " not locked: the acquisition was cancelled";
        case errc::client_stopped:
            return std::string{several ? "were" : "was"} + " not locked: the client was shut down";
        default:
            return "could not be locked";
    }
}

}  // namespace

auto names_holder(const lock_state& lock, errc reason) noexcept -> bool {
    return reason == errc::contended && lock.resources.size() == 1 &&
           lock.kind != lock_kind::permit;
}

auto failure_summary(const lock_state& lock, const acquire_decision& decision, held_resources held,
                     errc reason) -> std::string {
    const bool several = lock.resources.size() > 1;
    const std::string what = what_failed(lock, held, reason);
    const std::size_t n = decision.settings().nodes;
    const std::size_t attempts = decision.attempt();
    std::string names = "'" + lock.resources.front() + "'";
    for (std::size_t i = 1; i < lock.resources.size(); ++i)
        names += ", '" + lock.resources[i] + "'";
    return (several ? "resources " : "resource ") + names + (what.starts_with(':') ? "" : " ") +
           what + " (" + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") +
           "; last attempt: " + std::to_string(decision.nodes().count(node_status::ok)) + " of " +
           std::to_string(n) + " nodes " +
           (decision.settings().fencing ? "granted or confirmed, " : "granted, ") +
           std::to_string(quorum(n)) + " needed";
}

}  // namespace redlock::detail
