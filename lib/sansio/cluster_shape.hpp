#pragma once

// What the shape of a client's cluster deserves a warning about: an even
// number of nodes, and two configured nodes that turn out to be one server.

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::detail {

/// The warning an even node count deserves (empty for an odd count): a
/// majority of n + 1 nodes is no larger, and tolerates one more failure.
[[nodiscard]] auto even_node_count_warning(std::size_t nodes) -> std::string;

/// Nodes that report one server's run_id. Validation catches the aliases it
/// can see (config_validate); two names of one server that it cannot (a DNS
/// alias, a Unix socket and a TCP port) show here. Acquisition stays safe
/// (SET NX), but a majority of the configured nodes is then not a majority of
/// independent servers.
class shared_server_check {
public:
    explicit shared_server_check(std::size_t nodes) : run_ids_(nodes) {}

    /// Node `node` answered a handshake with `run_id` (empty: none reported):
    /// the pairs of nodes (lower index first) it now shares a server with,
    /// each reported only the first time.
    [[nodiscard]] auto identified(std::size_t node, std::string_view run_id)
        -> std::vector<std::pair<std::size_t, std::size_t>>;

private:
    std::vector<std::string> run_ids_;  // each node's, as of its last answered handshake
    std::set<std::pair<std::size_t, std::size_t>> reported_;
};

}  // namespace redlock::detail
