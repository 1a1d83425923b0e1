#include "client/client_setup.hpp"

#include <cstddef>
#include <utility>

namespace redlock::detail {

auto checked_setup(client_config& config) -> result<std::shared_ptr<const tls_context>> {
    constexpr std::size_t max_nodes = 255;
    if (auto problem = validate_config(config)) {
        return failure{error{make_error_code(errc::invalid_config), problem->what(), {}, 0}};
    }
    if (config.member_count() > max_nodes) {
        return failure{error{make_error_code(errc::invalid_config),
                             "<config>: /nodes: at most 255 members (nodes, clusters and "
                             "sentinel masters together) are supported",
                             {},
                             0}};
    }
    if (!config.tls) return std::shared_ptr<const tls_context>{};
    // Files that exist but hold no certificate (or a key of another
    // certificate) only show here, when OpenSSL reads them.
    auto [context, problem] = tls_context::create(*config.tls);
    if (problem) {
        problem->file = "<config>";
        return failure{error{make_error_code(errc::invalid_config), problem->what(), {}, 0}};
    }
    return std::move(context);
}

}  // namespace redlock::detail
