#include "client/election_commands.hpp"

#include "client/probe_replies.hpp"
#include "operations/acquire_checks.hpp"
#include "operations/lock_commands.hpp"
#include "sansio/election_scripts.hpp"
#include "sansio/election_tally.hpp"

#include <utility>

namespace redlock::detail {
namespace {

auto key(const client_config& config, const std::string& name, std::string_view suffix = {})
    -> std::string {
    return std::string{tagged_key(config.key_prefix, name, suffix).view()};
}

auto watch_call(const client_config& config, const std::string& name, std::string_view observer)
    -> std::vector<std::string> {
    return {"EVAL",
            std::string{watch_source()},
            "1",
            key(config, name, observers_key_suffix),
            std::string{observer},
            std::to_string(observer_ttl.count())};
}

}  // namespace

auto election_problem(const std::string& name) -> std::string {
    if (name.empty()) return "the election name is empty";
    return resource_problem(name);
}

auto proclaim_commands(const key_space& space, const std::string& name, std::string_view lock_value,
                       std::uint64_t term, std::uint64_t seq, std::string_view value)
    -> std::vector<std::vector<std::string>> {
    auto at = [&](std::string_view suffix) {
        return std::string{tagged_key(space.key_prefix, name, suffix).view()};
    };
    return {{"EVAL", std::string{elect_write_source()}, "3", at({}), at(leader_key_suffix),
             at(observers_key_suffix), std::string{lock_value},
             std::string{classic_wake_prefix(space)}, shard_wake_channel(space, name),
             std::to_string(term), std::to_string(seq), std::string{value}}};
}

auto count_writes(const std::vector<node_probe>& probes) -> write_count {
    write_count count;
    for (const auto& p : probes) {
        if (!p.answered || p.replies.size() != 1) continue;
        const flat_reply& r = p.replies.front();
        if (r.type != flat_reply::kind::integer) continue;
        ++(r.integer == 1 ? count.done : count.refused);
    }
    return count;
}

auto leader_commands(const client_config& config, const std::string& name,
                     std::string_view observer) -> std::vector<std::vector<std::string>> {
    std::vector<std::vector<std::string>> c;
    if (!observer.empty()) c.push_back(watch_call(config, name, observer));
    const std::string lock = key(config, name);
    c.push_back({"GET", lock});
    c.push_back({"PTTL", lock});
    c.push_back({"HMGET", key(config, name, leader_key_suffix), "term", "lock", "seq", "value"});
    c.push_back({"GET", std::string{tagged_key(config.fence_prefix, name).view()}});
    return c;
}

auto watch_commands(const client_config& config, const std::string& name, std::string_view observer)
    -> std::vector<std::vector<std::string>> {
    return {watch_call(config, name, observer)};
}

auto unwatch_commands(const client_config& config, const std::string& name,
                      std::string_view observer) -> std::vector<std::vector<std::string>> {
    return {{"HDEL", key(config, name, observers_key_suffix), std::string{observer}}};
}

auto parse_leader(std::string name, std::size_t quorum, const std::vector<node_probe>& probes)
    -> election_view {
    std::vector<node_election> nodes;
    nodes.reserve(probes.size());
    for (const auto& p : probes) {
        node_election n;
        // The registration, when there is one, comes first: the last four are the reads.
        if (p.answered && p.replies.size() >= 4 && first_error(p).empty()) {
            const auto r = std::span{p.replies}.last(4);
            n.answered = true;
            n.lock_value = text_of(r[0]);
            n.ttl = ttl_of(r[1]);
            if (r[2].type == flat_reply::kind::array && r[2].elements.size() == 4) {
                const auto& f = r[2].elements;
                if (const auto t = text_of(f[0])) n.leader_term = number_of(*t);
                n.leader_lock = text_of(f[1]);
                if (const auto s = text_of(f[2])) n.leader_seq = number_of(*s);
                n.leader_value = text_of(f[3]);
            }
            if (const auto c = text_of(r[3])) n.counter = number_of(*c);
        }
        nodes.push_back(std::move(n));
    }
    return tally_election(std::move(name), nodes, quorum);
}

}  // namespace redlock::detail
