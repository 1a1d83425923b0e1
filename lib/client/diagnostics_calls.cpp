#include "client/diagnostics_calls.hpp"

#include "client/client_calls.hpp"
#include "client/diagnostics_members.hpp"
#include "client/diagnostics_parse.hpp"
#include "operations/acquire_checks.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/timing.hpp"

#include <memory>
#include <utility>
#include <vector>

namespace redlock::detail {

void start_status(client_core& core, std::string resource,
                  std::function<void(result<lock_status>)> done) {
    std::string invalid =
        resource.empty() ? "the resource name is empty" : resource_problem(resource);
    auto commands = invalid.empty() ? status_commands(core.config(), resource)
                                    : std::vector<std::vector<std::string>>{};
    const std::size_t needed = quorum(core.node_count());
    const std::uint16_t slot = resource_slot(resource);
    probe_then(
        core, std::move(invalid), std::move(commands), std::move(done),
        [resource = std::move(resource), needed](auto probes) mutable {
            return parse_status(std::move(resource), needed, std::move(probes));
        },
        slot);
}

void start_semaphore_status(client_core& core, std::string resource, int permits,
                            std::function<void(result<semaphore_status>)> done) {
    std::string invalid =
        resource.empty() ? "the resource name is empty" : resource_problem(resource);
    if (permits < 1 || permits > max_permits) {
        invalid = "permits must be between 1 and " + std::to_string(max_permits) + ", not " +
                  std::to_string(permits);
    }
    auto commands = invalid.empty() ? semaphore_commands(core.config(), resource, permits)
                                    : std::vector<std::vector<std::string>>{};
    const std::size_t needed = quorum(core.node_count());
    const std::uint16_t slot = resource_slot(resource);
    probe_then(
        core, std::move(invalid), std::move(commands), std::move(done),
        [resource = std::move(resource), permits, needed](auto probes) mutable {
            return parse_semaphore(std::move(resource), permits, needed, std::move(probes));
        },
        slot);
}

void start_check(client_core& core, std::function<void(result<cluster_health>)> done) {
    const std::size_t needed = quorum(core.node_count());
    auto setups = check_setups(core.config());
    check_plan plan = check_plan_for(setups);
    // One callback for the two ways this ends: the result, or the client refusing
    // operations (stopping); called once, and guarded like any user callback.
    auto shared = std::make_shared<std::function<void(result<cluster_health>)>>(std::move(done));
    const auto finish = [shared](result<cluster_health> outcome) {
        auto callback = std::move(*shared);
        *shared = nullptr;
        if (callback) call_guarded([&] { callback(std::move(outcome)); });
    };
    core.start_operation(
        [plan = std::move(plan), setups = std::move(setups), needed,
         finish](op_context& ctx) mutable {
            return std::make_unique<check_op>(
                ctx, std::move(plan),
                [setups = std::move(setups), needed, finish](std::vector<member_check> checks) {
                    finish(parse_members(needed, setups, std::move(checks)));
                });
        },
        [finish] {
            finish(failure{error{
                make_error_code(errc::client_stopped), "the client has been shut down", {}, 0}});
        });
}

}  // namespace redlock::detail
