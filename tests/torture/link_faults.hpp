#pragma once

// Faults on one client's own proxies (an election candidate's, an observer's), drawn the same
// way for both: the schedule depends on the seed alone.

#include "support/fault_proxy.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace redlock_torture {

/// A client cut off from some of its nodes.
struct link_partition {
    bool majority = false;           ///< from a majority (two times in three), else a minority
    std::string nodes;               ///< the nodes cut off, "0,1,2"
    std::chrono::milliseconds span;  ///< heal after this long: 300 ms to 3 s
};

/// Blackholes the proxies the draw `a` names: a majority of them, or 1 up to a minority.
inline auto cut_off(std::vector<redlock_test::fault_proxy>& proxies, std::int64_t a)
    -> link_partition {
    const std::size_t nodes = proxies.size();
    link_partition p{.majority = a % 3 != 0, .nodes = {}, .span = std::chrono::milliseconds{0}};
    const std::size_t cut = p.majority ? nodes / 2 + 1 : 1 + (a / 3) % (nodes / 2);
    const std::size_t first = static_cast<std::size_t>(a / 7) % nodes;
    for (std::size_t i = 0; i < cut; ++i) {
        const std::size_t node = (first + i) % nodes;
        proxies[node].blackhole();
        p.nodes += (p.nodes.empty() ? "" : ",") + std::to_string(node);
    }
    p.span = std::chrono::milliseconds{300 + (a / 11) % 2701};
    return p;
}

}  // namespace redlock_torture
