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
    return "node " + std::to_string(node) + ": " + key + " (" + shape_name(shape) + ")" +
           (value.empty() ? "" : " = " + value) + ", pttl " + std::to_string(pttl_ms) + " ms";
}

auto scan_keys(const std::vector<redlock_test::redis_server>& nodes, const key_layout& layout)
    -> std::vector<leftover> {
    std::vector<leftover> found;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        for (const auto& prefix : {layout.key_prefix, layout.queue_prefix}) {
            for (auto& key : keys_matching(nodes[i], prefix + "*")) {
                leftover l;
                l.node = i;
                l.shape = shape_of(key, layout).value_or(key_shape::unknown);
                l.pttl_ms = nodes[i].pttl(key);
                // The holder's value, for a failure message; sets, queues and hashes have none.
                if (l.shape != key_shape::reader_set && l.shape != key_shape::queue &&
                    l.shape != key_shape::liveness)
                    l.value = nodes[i].get(key).value_or("(gone)");
                l.key = std::move(key);
                found.push_back(std::move(l));
            }
        }
    }
    return found;
}

}  // namespace redlock_torture
