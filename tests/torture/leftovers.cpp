#include "leftovers.hpp"

#include <sstream>

namespace redlock_torture {

auto keys_matching(const redlock_test::redis_server& node, const std::string& pattern)
    -> std::vector<std::string> {
    std::vector<std::string> keys;
    std::istringstream reply{node.command({"KEYS", pattern}).value_or("")};
    for (std::string key; std::getline(reply, key);) {
        if (!key.empty()) keys.push_back(key);
    }
    return keys;
}

auto leftover::describe() const -> std::string {
    return node_name + ": " + key + " (" + shape_name(shape) + ")" +
           (value.empty() ? "" : " = " + value) + ", pttl " + std::to_string(pttl_ms) + " ms";
}

auto scan_keys(const std::vector<named_node>& nodes, const key_layout& layout)
    -> std::vector<leftover> {
    std::vector<leftover> found;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const redlock_test::redis_server& node = *nodes[i].server;
        for (const auto& prefix : {layout.key_prefix, layout.queue_prefix}) {
            for (auto& key : keys_matching(node, prefix + "*")) {
                leftover l;
                l.node = i;
                l.node_name = nodes[i].name;
                l.shape = shape_of(key, layout).value_or(key_shape::unknown);
                l.pttl_ms = node.pttl(key);
                // The holder's value, for a failure message: only the string keys have one
                // (sets, queues and hashes do not; of a key of no known shape, its type).
                const bool string_key = l.shape == key_shape::lock ||
                                        l.shape == key_shape::permit ||
                                        l.shape == key_shape::permit_count;
                if (string_key) {
                    l.value = node.get(key).value_or("(gone)");
                } else if (l.shape == key_shape::unknown) {
                    l.value = "(type " + node.command({"TYPE", key}).value_or("?") + ")";
                }
                l.key = std::move(key);
                found.push_back(std::move(l));
            }
        }
    }
    return found;
}

auto scan_keys(const std::vector<redlock_test::redis_server>& nodes, const key_layout& layout)
    -> std::vector<leftover> {
    std::vector<named_node> named;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        named.push_back({"node " + std::to_string(i), &nodes[i]});
    return scan_keys(named, layout);
}

}  // namespace redlock_torture
