#include "client/client_listing.hpp"

#include "client/client_core.hpp"
#include "operations/list_op.hpp"
#include "sansio/lock_listing.hpp"
#include "sansio/timing.hpp"
#include "transport/callback_guard.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

namespace redlock::detail {
namespace {

constexpr std::size_t max_batch = 10000;

auto invalid(std::string message) -> error {
    return error{make_error_code(errc::invalid_argument), std::move(message), {}, 0};
}

}  // namespace

auto listing_problem(const client_config& config, const list_options& options) -> std::string {
    if (!config.clusters.empty()) {
        return "list does not support cluster members (config.clusters): a cluster's locks "
               "are spread over its masters, and list scans one server per member; list the "
               "standalone and Sentinel members' locks with a config without the clusters";
    }
    if (options.limit == 0) return "the list limit must be at least 1 key per node";
    if (options.batch == 0 || options.batch > max_batch) {
        return "the list batch (SCAN COUNT) must be between 1 and " + std::to_string(max_batch) +
               ", not " + std::to_string(options.batch);
    }
    if (options.budget < std::chrono::milliseconds{0}) return "the list budget is negative";
    return {};
}

void start_listing(client_core& core, list_options options,
                   std::function<void(result<lock_listing>)> done) {
    auto shared_done = std::make_shared<std::function<void(result<lock_listing>)>>(std::move(done));
    const auto finish = [shared_done](result<lock_listing> outcome) {
        auto callback = std::move(*shared_done);
        *shared_done = nullptr;
        if (callback) call_guarded([&] { callback(std::move(outcome)); });
    };
    if (std::string problem = listing_problem(core.config(), options); !problem.empty()) {
        // Delivered through the loop, never inside this call: a probe with nothing to ask.
        core.probe({}, [finish, problem = std::move(problem)](auto) {
            finish(failure{invalid(problem)});
        });
        return;
    }
    const client_config& config = core.config();
    list_request request{config.key_prefix, config.fence_prefix, std::move(options.prefix),
                         options.limit,     options.batch,       options.budget};
    if (request.budget == std::chrono::milliseconds{0})
        request.budget = std::max(config.request_timeout * 20, std::chrono::milliseconds{1000});
    const std::size_t needed = quorum(core.node_count());
    core.start_operation(
        [request = std::move(request), finish, needed](op_context& ctx) mutable {
            return std::make_unique<list_op>(ctx, std::move(request),
                                             [finish, needed](std::vector<node_scan> scans) {
                                                 finish(tally_listing(std::move(scans), needed));
                                             });
        },
        [finish] {
            finish(failure{error{
                make_error_code(errc::client_stopped), "the client has been shut down", {}, 0}});
        });
}

}  // namespace redlock::detail
