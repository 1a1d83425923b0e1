#pragma once

// What is left on the nodes at the end of the torture and CLI stress tests: every key under
// the lock and queue prefixes (fence counters never expire and are left out), with its
// shape (key_shapes.hpp) and its TTL.

#include "key_shapes.hpp"
#include "support/redis_server.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace redlock_torture {

struct leftover {
    std::size_t node = 0;   ///< the index in the list scanned
    std::string node_name;  ///< how describe() names it: "node 2", "member 1 node 3"
    std::string key;
    key_shape shape = key_shape::unknown;
    std::int64_t pttl_ms = -2;
    std::string value;  ///< GET's answer, for the keys that hold a string

    /// "<node_name>: redlock:{x}|permits (permit count) = 2, pttl 120 ms".
    [[nodiscard]] auto describe() const -> std::string;
};

/// The keys KEYS `pattern` lists on `node`.
[[nodiscard]] auto keys_matching(const redlock_test::redis_server& node, const std::string& pattern)
    -> std::vector<std::string>;

/// A node to scan, and how to name it.
struct named_node {
    std::string name;
    const redlock_test::redis_server* server = nullptr;
};

/// Every key under either prefix of `layout` on every node. The nodes must be running and
/// not frozen.
[[nodiscard]] auto scan_keys(const std::vector<named_node>& nodes, const key_layout& layout)
    -> std::vector<leftover>;
/// The same, naming them "node 0", "node 1"...
[[nodiscard]] auto scan_keys(const std::vector<redlock_test::redis_server>& nodes,
                             const key_layout& layout) -> std::vector<leftover>;

}  // namespace redlock_torture
