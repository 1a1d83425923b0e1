#include "client/campaign.hpp"

#include "client/client_calls.hpp"
#include "client/election_commands.hpp"
#include "client/leadership_state.hpp"
#include "operations/lock_state.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/timing.hpp"

#include <chrono>
#include <utility>
#include <vector>

namespace redlock::detail {
namespace {

auto invalid(std::string message) -> error {
    return error{make_error_code(errc::invalid_argument), std::move(message), {}, 0};
}

/// A proclamation's outcome from the nodes' answers.
auto proclaimed(const std::string& name, std::size_t quorum, std::size_t nodes,
                const result<std::vector<node_probe>>& probes) -> result<void> {
    if (!probes) return failure{probes.error()};
    const write_count count = count_writes(*probes);
    if (count.done >= quorum) return {};
    const std::string tally = std::to_string(count.done) + " of " + std::to_string(nodes) +
                              " nodes stored it, " + std::to_string(quorum) + " needed";
    if (count.refused > nodes - quorum) {
        return failure{error{make_error_code(errc::not_held),
                             "election '" + name + "': no longer the leader (" + tally + ")",
                             {},
                             0}};
    }
    return failure{
        error{make_error_code(errc::quorum_unreachable),
              "election '" + name + "': proclamation not stored on a majority (" + tally + ")",
              {},
              0}};
}

auto lock_options_of(campaign_options& options) -> lock_options {
    lock_options lo;
    lo.ttl = options.ttl;
    // Waiting needs a deadline; unbounded is the clock's end (acquire_decision clamps it).
    lo.max_wait = options.max_wait.value_or(std::chrono::milliseconds::max());
    lo.auto_renew = true;
    lo.fencing = true;
    lo.wait = wait_mode::fair;
    lo.holder = std::move(options.holder);
    return lo;
}

}  // namespace

void proclaim_on_nodes(const std::shared_ptr<leadership_state>& state, std::string value,
                       std::uint64_t seq, std::function<void(result<void>)> done) {
    client_core& core = *state->core;
    const std::size_t quorum = detail::quorum(core.node_count());
    const std::size_t nodes = core.node_count();
    auto commands =
        proclaim_commands(core.keys(), state->name, state->held.value(), state->term, seq, value);
    core.probe(
        std::move(commands),
        [state, seq, quorum, nodes, value = std::move(value),
         done = std::move(done)](result<std::vector<node_probe>> probes) mutable {
            result<void> outcome = proclaimed(state->name, quorum, nodes, probes);
            if (outcome) {
                const std::lock_guard hold{state->mutex};
                if (seq >= state->value_seq) {
                    state->value = std::move(value);
                    state->value_seq = seq;
                }
            }
            done(std::move(outcome));
        },
        resource_slot(state->name));
}

auto start_campaign(const std::shared_ptr<client_core>& core, std::string name,
                    std::string proposal, campaign_options options,
                    std::function<void(result<leadership>)> done) -> client::acquire_ticket {
    std::string problem = election_problem(name);
    if (problem.empty() && proposal.size() > max_proposal_length)
        problem = "the proposal is longer than " + std::to_string(max_proposal_length) + " bytes";
    if (!problem.empty()) {
        // Through the loop, never inside this call: a probe with nothing to ask.
        core->probe({}, [done = std::move(done), problem = std::move(problem)](auto) {
            done(failure{invalid(problem)});
        });
        return orphan_ticket();
    }
    auto state = std::make_shared<leadership_state>();
    state->core = core;
    state->name = name;
    state->value = std::move(proposal);
    lock_options lo = lock_options_of(options);
    // Weak: the lock's state (kept by the watchdog) must not keep the leadership alive.
    // Observers hear of a loss even when nobody keeps the leadership: the release
    // that follows on_lost once the term's validity has ended (watchdog.cpp,
    // release_when_invalid) abdicates, as every release of a campaign's lock does
    // (lock_commands.cpp, release_call).
    lo.on_lost = [weak = std::weak_ptr<leadership_state>{state},
                  on_lost = std::move(options.on_lost)](const lock&, const error& why) {
        if (const auto s = weak.lock(); s && on_lost) on_lost(leadership_state::handle(s), why);
    };
    // The fencing confirm stores the proposal as the term's first proclamation
    // (lock_state::proclamation): granted on a majority is proclaimed on it.
    auto won = [state, done = std::move(done)](result<lock> held) mutable {
        if (!held) return done(failure{std::move(held).error()});
        state->held = *held;
        state->term = held->fence().value_or(0);
        done(leadership_state::handle(state));
    };
    std::vector<std::string> resources;
    resources.push_back(std::move(name));
    auto proclamation = std::make_shared<const std::string>(state->value);
    return core->acquire(std::move(resources), std::move(lo), std::move(won),
                         std::move(proclamation));
}

}  // namespace redlock::detail
