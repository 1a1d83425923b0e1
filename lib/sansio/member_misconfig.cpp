#include "sansio/member_misconfig.hpp"

#include <array>
#include <string>
#include <utility>

namespace redlock::detail {
namespace {

// What node_handshake::check_role and sentinel_router say of a member that is set up wrong.
constexpr std::array configuration_phrases{
    std::string_view{"is not in cluster mode (cluster_enabled:0)"},
    std::string_view{"is a Redis Cluster node (cluster_enabled:1)"},
    std::string_view{"does not know a master named"},
};

}  // namespace

auto configuration_cause(std::string_view detail) noexcept -> bool {
    for (const std::string_view phrase : configuration_phrases) {
        if (detail.find(phrase) != std::string_view::npos) return true;
    }
    return false;
}

auto configuration_failure(error e) -> error {
    if (e.code != errc::quorum_unreachable) return e;
    std::string members;
    std::size_t count = 0;
    for (const node_report& n : e.nodes) {
        if (n.status == node_status::ok || !configuration_cause(n.detail)) continue;
        members += (count++ == 0 ? "" : ", ") + n.node.str();
    }
    if (count == 0) return e;
    e.code = make_error_code(errc::invalid_config);
    e.message = "configuration: " + members +
                " can never grant a lock as configured (the cause is below); " + e.message;
    return e;
}

}  // namespace redlock::detail
