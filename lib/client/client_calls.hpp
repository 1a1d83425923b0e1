#pragma once

// What the members of redlock::client (client.cpp) share: the errors they
// refuse with, how a blocking form waits for its _async form, and how a
// read-only probe (status, check, the operators' tools) runs.

#include "client/client_core.hpp"
#include "operations/acquire_checks.hpp"
#include "redlock/client.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/timing.hpp"
#include "transport/callback_guard.hpp"

#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace redlock::detail {

inline auto deadlock_error(const char* what) -> error {
    return error{make_error_code(errc::would_deadlock),
                 std::string{"blocking "} + what +
                     " called on the client's loop thread; use the _async form there",
                 {},
                 0};
}

/// status and check have always said "blocking call" rather than their name;
/// kept word for word so that moving them from diagnostics.cpp changed no message.
inline auto unnamed_deadlock_error() -> error {
    return error{make_error_code(errc::would_deadlock),
                 "blocking call on the client's loop thread; use the _async form there",
                 {},
                 0};
}

inline auto moved_from_error() -> error {
    return error{make_error_code(errc::client_stopped), "the client was moved from", {}, 0};
}

/// A moved-from client has no loop: its callbacks run on a thread of their own,
/// never inside the call, as the contract says of every callback.
template <class Callback>
void refuse_moved_from(Callback done) {
    if (!done) return;
    run_detached([done = std::move(done)] { done(failure{moved_from_error()}); });
}

/// Tickets of a moved-from client: never 0, never one of a live client's (those
/// count up from 1), and cancel() ignores them.
inline auto orphan_ticket() noexcept -> client::acquire_ticket {
    static std::atomic<client::acquire_ticket> next{client::acquire_ticket{1} << 63};
    return next.fetch_add(1, std::memory_order_relaxed);
}

/// Runs `start(callback)` and waits for the callback's value. Whatever start
/// returns (a stop_callback, say) lives until the value has arrived.
template <class T, class Start>
auto wait_for(Start&& start) -> result<T> {
    std::promise<result<T>> promise;
    auto future = promise.get_future();
    std::function<void(result<T>)> deliver = [&promise](result<T> r) {
        promise.set_value(std::move(r));
    };
    if constexpr (std::is_void_v<std::invoke_result_t<Start, std::function<void(result<T>)>>>) {
        start(std::move(deliver));
        return future.get();
    } else {
        [[maybe_unused]] auto keep = start(std::move(deliver));
        return future.get();
    }
}

/// The status probes: `invalid`, if not empty, is delivered to `done` as invalid_argument
/// through the loop; otherwise `commands` go to every node (a cluster's: to `slot`'s master)
/// and `parse` makes the result of the answers.
template <class T, class Parse>
void probe_then(client_core& core, std::string invalid,
                std::vector<std::vector<std::string>> commands, std::function<void(result<T>)> done,
                Parse parse, std::uint16_t slot) {
    if (!invalid.empty()) {
        core.probe({}, [invalid = std::move(invalid),
                        done = std::move(done)](result<std::vector<node_probe>>) {
            done(failure{error{make_error_code(errc::invalid_argument), invalid, {}, 0}});
        });
        return;
    }
    auto answered = [parse = std::move(parse),
                     done = std::move(done)](result<std::vector<node_probe>> probes) mutable {
        done(probes ? result<T>{parse(std::move(*probes))}
                    : result<T>{failure{std::move(probes).error()}});
    };
    core.probe(std::move(commands), std::move(answered), slot);
}

/// A blocking member: refused on a moved-from client and on the loop thread
/// (`what` names it; nullptr for the unnamed message), else `start(callback)`
/// of its _async form, awaited.
template <class T, class Start>
auto blocking(const std::shared_ptr<client_core>& core, const char* what, Start&& start)
    -> result<T> {
    if (!core) return failure{moved_from_error()};
    if (core->on_loop_thread())
        return failure{what != nullptr ? deadlock_error(what) : unnamed_deadlock_error()};
    return wait_for<T>(std::forward<Start>(start));
}

/// A probe about one resource (the operators' tools): refused with invalid_argument when
/// the resource is not a lock's name (resource_problem) or `invalid` says why; otherwise
/// `commands(resource)` go to every node (its slot's master, for a cluster member) and
/// `parse(resource, quorum, probes)` makes the result.
template <class T, class Commands, class Parse>
void probe_resource(client_core& core, std::string resource, std::string invalid, Commands commands,
                    Parse parse, std::function<void(result<T>)> done) {
    std::string problem =
        resource.empty() ? std::string{"the resource name is empty"} : resource_problem(resource);
    if (problem.empty()) problem = std::move(invalid);
    auto sent = problem.empty() ? commands(resource) : std::vector<std::vector<std::string>>{};
    const std::uint16_t slot = resource_slot(resource);
    probe_then(
        core, std::move(problem), std::move(sent), std::move(done),
        [resource = std::move(resource), quorum = quorum(core.node_count()),
         parse = std::move(parse)](std::vector<node_probe> probes) mutable {
            return parse(std::move(resource), quorum, std::move(probes));
        },
        slot);
}

}  // namespace redlock::detail
