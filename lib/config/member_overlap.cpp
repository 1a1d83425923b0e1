#include "config/member_overlap.hpp"

#include "config/node_alias.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace redlock::detail {
namespace {

enum class role { node, seed, sentinel };

/// One address of the configuration: which list it is in, and where.
struct entry {
    role kind;
    std::size_t member;   ///< the index of its member in its array (of its node, for nodes)
    std::string pointer;  ///< "/clusters/1/seeds/0"
    node_identity id;
};

using problem = std::pair<std::string, std::string>;

auto addresses(const client_config& config) -> std::vector<entry> {
    std::vector<entry> all;
    for (std::size_t i = 0; i < config.nodes.size(); ++i)
        all.push_back({role::node, i, "/nodes/" + std::to_string(i), identify(config.nodes[i])});
    const auto add = [&](role kind, std::size_t member, const std::string& list,
                         const std::vector<node_address>& nodes) {
        for (std::size_t k = 0; k < nodes.size(); ++k)
            all.push_back({kind, member, list + "/" + std::to_string(k), identify(nodes[k])});
    };
    for (std::size_t i = 0; i < config.clusters.size(); ++i)
        add(role::seed, i, "/clusters/" + std::to_string(i) + "/seeds", config.clusters[i].seeds);
    for (std::size_t i = 0; i < config.sentinel_masters.size(); ++i) {
        add(role::sentinel, i, "/sentinel_masters/" + std::to_string(i) + "/sentinels",
            config.sentinel_masters[i].sentinels);
    }
    return all;
}

/// Written the same way, as validate_config compares two nodes: the host
/// ignoring case, the port, or the Unix path as written.
auto spelled_alike(const node_identity& a, const node_identity& b) -> bool {
    const node_address& x = a.address;
    const node_address& y = b.address;
    if (x.is_unix() || y.is_unix()) return x.is_unix() && y.is_unix() && x.unix_path == y.unix_path;
    const auto lower = [](unsigned char c) { return std::tolower(c); };
    return x.port == y.port && x.host.size() == y.host.size() &&
           std::equal(x.host.begin(), x.host.end(), y.host.begin(), [&](char p, char q) {
               return lower(static_cast<unsigned char>(p)) == lower(static_cast<unsigned char>(q));
           });
}

/// How `later` names the server of `earlier`, or nullopt when it may be
/// another: "127.0.0.1:7001 is also /nodes/0", or "localhost:7001 is the same
/// server as /nodes/0 (127.0.0.1:7001; localhost is the loopback address ...)".
auto sameness(const entry& earlier, const entry& later) -> std::optional<std::string> {
    const std::string name = later.id.address.to_string();
    if (spelled_alike(earlier.id, later.id)) return name + " is also " + earlier.pointer;
    const auto why = alias_reason(earlier.id, later.id);
    if (!why) return std::nullopt;
    return name + " is the same server as " + earlier.pointer + " (" +
           earlier.id.address.to_string() + "; " + *why + ")";
}

/// Within one member's list: the existing words for two nodes.
auto repeated(const entry& earlier, const entry& later) -> std::optional<std::string> {
    const std::string first = earlier.pointer + " (" + earlier.id.address.to_string() + ")";
    if (spelled_alike(earlier.id, later.id)) return "duplicate of " + first;
    const auto why = alias_reason(earlier.id, later.id);
    if (!why) return std::nullopt;
    return later.id.address.to_string() + " is the same server as " + first + ": " + *why;
}

auto pair_problem(const client_config& config, const entry& earlier, const entry& later)
    -> std::optional<problem> {
    if (earlier.kind == role::node && later.kind == role::node) return std::nullopt;
    if (earlier.kind == later.kind && earlier.member == later.member) {
        if (auto text = repeated(earlier, later)) return problem{later.pointer, std::move(*text)};
        return std::nullopt;
    }
    if (earlier.kind == role::sentinel && later.kind == role::sentinel) {
        // One Sentinel group monitors any number of masters, each by its own name.
        const std::string& name = config.sentinel_masters[later.member].master_name;
        if (name != config.sentinel_masters[earlier.member].master_name) return std::nullopt;
        const auto same = sameness(earlier, later);
        if (!same) return std::nullopt;
        const std::string master = "/sentinel_masters/" + std::to_string(later.member);
        return problem{
            master + "/master_name",
            "\"" + name + "\" is also /sentinel_masters/" + std::to_string(earlier.member) +
                "/master_name, asked of the same Sentinel (" + later.pointer + ": " + *same +
                "): the same Sentinel-managed master listed twice. It is one quorum member: "
                "list it once (one Sentinel group may monitor several masters, each under its "
                "own master_name)"};
    }
    const auto same = sameness(earlier, later);
    if (!same) return std::nullopt;
    if (earlier.kind == role::seed && later.kind == role::seed) {
        return problem{later.pointer,
                       *same +
                           ": the same Redis Cluster listed twice. A cluster is one quorum "
                           "member however many seeds name it: list it once, with all its "
                           "seeds in one \"seeds\" array"};
    }
    if (later.kind == role::seed) {  // and a standalone node
        return problem{later.pointer,
                       *same +
                           ": one server cannot be both a standalone member (\"nodes\") and a "
                           "node of a Redis Cluster member (\"clusters\"): list a cluster's "
                           "nodes under \"clusters\" only"};
    }
    // A Sentinel that is also a data node or a cluster seed.
    return problem{later.pointer, *same +
                                      ": one server cannot be both a Sentinel and a data node. A "
                                      "Sentinel-managed member names its Sentinels (port 26379 by "
                                      "default), not its master"};
}

}  // namespace

auto member_overlap_problem(const client_config& config) -> std::optional<problem> {
    const std::vector<entry> all = addresses(config);
    for (std::size_t i = 0; i < all.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            if (auto p = pair_problem(config, all[j], all[i])) return p;
        }
    }
    return std::nullopt;
}

}  // namespace redlock::detail
