// Every member of redlock::leadership (election.hpp): a handle on the state a
// campaign won (leadership_state.hpp). proclaim and resign write on the nodes
// through the client that campaigned.

#include "client/campaign.hpp"
#include "client/client_calls.hpp"
#include "client/election_commands.hpp"
#include "client/leadership_state.hpp"
#include "operations/lock_state.hpp"
#include "redlock/election.hpp"
#include "sansio/hash_slot.hpp"

#include <utility>
#include <vector>

namespace redlock {
namespace {

auto empty_handle() -> error {
    return error{make_error_code(errc::invalid_argument), "the leadership handle is empty", {}, 0};
}

/// An empty handle has no client: its callback runs on a thread of its own.
template <class Callback>
void refuse_empty(Callback done) {
    if (!done) return;
    detail::run_detached([done = std::move(done)] { done(failure{empty_handle()}); });
}

const std::string no_name;
const lock no_lock;

}  // namespace

auto leadership::name() const -> const std::string& {
    return state_ ? state_->name : no_name;
}

auto leadership::term() const noexcept -> std::uint64_t {
    return state_ ? state_->term : 0;
}

auto leadership::value() const -> std::string {
    if (!state_) return {};
    const std::lock_guard hold{state_->mutex};
    return state_->value;
}

auto leadership::held() const -> const lock& {
    return state_ ? state_->held : no_lock;
}

auto leadership::valid() const noexcept -> bool {
    return state_ && state_->held.valid();
}

auto leadership::lost() const noexcept -> bool {
    return state_ && state_->held.lost();
}

auto leadership::lost_token() const noexcept -> std::stop_token {
    return state_ ? state_->held.lost_token() : std::stop_token{};
}

void leadership::proclaim_async(std::string value, std::function<void(result<void>)> done) {
    if (!state_) return refuse_empty(std::move(done));
    if (value.size() > max_proposal_length) {
        state_->core->probe({}, [done = std::move(done)](auto) {
            done(failure{
                error{make_error_code(errc::invalid_argument),
                      "the value is longer than " + std::to_string(max_proposal_length) + " bytes",
                      {},
                      0}});
        });
        return;
    }
    std::uint64_t seq = 0;
    {
        const std::lock_guard hold{state_->mutex};
        seq = state_->next_seq++;
    }
    detail::proclaim_on_nodes(state_, std::move(value), seq, std::move(done));
}

auto leadership::proclaim(std::string value) -> result<void> {
    if (!state_) return failure{empty_handle()};
    return detail::blocking<void>(state_->core, "proclaim", [&](auto cb) {
        proclaim_async(std::move(value), std::move(cb));
    });
}

void leadership::resign_async(std::function<void(result<release_report>)> done) {
    if (!state_) return refuse_empty(std::move(done));
    const auto& state = state_;
    detail::client_core& core = *state->core;
    // One call per node: a campaign's lock abdicates in its release's script (the
    // leader key where it names this lock, then the release, which wakes the next
    // candidate in line; lock_commands.cpp, release_call).
    core.release(detail::lock_state::of(state->held), std::move(done));
}

auto leadership::resign() -> result<release_report> {
    if (!state_) return failure{empty_handle()};
    return detail::blocking<release_report>(state_->core, "resign",
                                            [&](auto cb) { resign_async(std::move(cb)); });
}

}  // namespace redlock
