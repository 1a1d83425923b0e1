#pragma once

// The quorum members that are not standalone masters, read from a
// configuration document: "clusters" and "sentinel_masters" (README,
// "Cluster and Sentinel members"). A template over config_json_fields.cpp's
// reader, so that one set of field readers (types, ranges, unknown keys,
// password variables) serves every level of the document.

#include "config/config_json_errors.hpp"
#include "redlock/config.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <string_view>

namespace redlock::detail {

inline constexpr std::array<std::string_view, 3> cluster_keys{"seeds", "wait_replicas",
                                                              "refresh_ms"};
inline constexpr std::array<std::string_view, 5> sentinel_keys{
    "sentinels", "master_name", "wait_replicas", "refresh_ms", "auth"};

/// Reads `root[key]` as an array of objects with `read_one(object, pointer)`.
template <class Reader, class ReadOne>
auto read_member_array(Reader& r, const nlohmann::json& root, std::string_view key,
                       ReadOne read_one) -> bool {
    const auto list = root.find(key);
    if (list == root.end()) return true;
    const std::string pointer = json_pointer("", key);
    if (!list->is_array())
        return r.fail(pointer, "must be an array (got " + describe_json_value(*list) + ")");
    for (std::size_t i = 0; i < list->size(); ++i) {
        if (!read_one((*list)[i], json_pointer(pointer, i))) return false;
    }
    return true;
}

/// `object[key]`: an array of node objects (as under "nodes").
template <class Reader>
auto read_node_list(Reader& r, const nlohmann::json& object, std::string_view key,
                    const std::string& pointer, std::vector<node_address>& out) -> bool {
    const std::string field = json_pointer(pointer, key);
    const auto list = object.find(key);
    if (list == object.end()) return r.fail(field, "is required");
    if (!list->is_array())
        return r.fail(field, "must be an array (got " + describe_json_value(*list) + ")");
    for (std::size_t i = 0; i < list->size(); ++i) {
        node_address node;
        if (!r.read_node((*list)[i], json_pointer(field, i), node)) return false;
        out.push_back(std::move(node));
    }
    return true;
}

template <class Reader>
auto read_members(Reader& r, const nlohmann::json& root, client_config& config) -> bool {
    const auto read_cluster = [&](const nlohmann::json& value, const std::string& pointer) {
        cluster_member m;
        if (!(r.check_object(value, pointer, cluster_keys) &&
              read_node_list(r, value, "seeds", pointer, m.seeds) &&
              r.read_int(value, "wait_replicas", pointer, m.wait_replicas, "must be at least 0") &&
              r.read_ms(value, "refresh_ms", pointer, m.refresh_interval)))
            return false;
        config.clusters.push_back(std::move(m));
        return true;
    };
    const auto read_sentinel = [&](const nlohmann::json& value, const std::string& pointer) {
        sentinel_member m;
        if (!(r.check_object(value, pointer, sentinel_keys) &&
              read_node_list(r, value, "sentinels", pointer, m.sentinels) &&
              r.read_string(value, "master_name", pointer, m.master_name, true) &&
              r.read_int(value, "wait_replicas", pointer, m.wait_replicas, "must be at least 0") &&
              r.read_ms(value, "refresh_ms", pointer, m.refresh_interval)))
            return false;
        if (!value.contains("master_name"))
            return r.fail(json_pointer(pointer, "master_name"), "is required");
        if (const auto auth = value.find("auth"); auth != value.end()) {
            if (!r.read_credentials(*auth, json_pointer(pointer, "auth"), m.sentinel_username,
                                    m.sentinel_password_env, m.sentinel_password))
                return false;
        }
        config.sentinel_masters.push_back(std::move(m));
        return true;
    };
    return read_member_array(r, root, "clusters", read_cluster) &&
           read_member_array(r, root, "sentinel_masters", read_sentinel);
}

}  // namespace redlock::detail
