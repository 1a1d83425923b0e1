#include "sansio/cluster_shape.hpp"

#include <algorithm>

namespace redlock::detail {

auto even_node_count_warning(std::size_t nodes) -> std::string {
    if (nodes % 2 != 0) return {};
    return std::to_string(nodes) + " nodes is an even number: a majority needs " +
           std::to_string(nodes / 2 + 1) +
           ", so one more node would add fault tolerance at no cost";
}

auto shared_server_check::identified(std::size_t node, std::string_view run_id)
    -> std::vector<std::pair<std::size_t, std::size_t>> {
    std::vector<std::pair<std::size_t, std::size_t>> found;
    if (node >= run_ids_.size()) return found;
    run_ids_[node] = run_id;
    if (run_id.empty()) return found;
    for (std::size_t other = 0; other < run_ids_.size(); ++other) {
        if (other == node || run_ids_[other] != run_id) continue;
        const auto pair = std::minmax(node, other);
        if (reported_.insert(pair).second) found.push_back(pair);
    }
    return found;
}

}  // namespace redlock::detail
