#include "client/audit_index.hpp"

#include "client/operator_commands.hpp"
#include "client/probe_replies.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/timing.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

namespace redlock::detail {
namespace {

auto index_key(const client_config& config) -> std::string {
    return config.key_prefix + "{~audit}|index";
}

/// The reads of audit_everything, one resource after another.
struct audit_walk {
    client_core& core;
    std::size_t limit;
    std::function<void(result<audit_log>)> done;
    std::vector<std::string> resources;  // left to read, the newest break last
    audit_log merged;

    void next(const std::shared_ptr<audit_walk>& self) {
        if (resources.empty()) return finish();
        std::string resource = std::move(resources.back());
        resources.pop_back();
        core.probe(
            audit_commands(core.config(), resource, limit),
            [self, resource](result<std::vector<node_probe>> probes) mutable {
                if (!probes) return self->done(failure{std::move(probes).error()});
                audit_log one = parse_audit(resource, self->merged.quorum, std::move(*probes));
                auto& m = self->merged;
                m.entries.insert(m.entries.end(), one.entries.begin(), one.entries.end());
                m.minority.insert(m.minority.end(), one.minority.begin(), one.minority.end());
                self->next(self);
            },
            resource_slot(resource));
    }

    void finish() {
        const auto newest_first = [](const audit_entry& a, const audit_entry& b) {
            return a.time > b.time;
        };
        std::ranges::stable_sort(merged.entries, newest_first);
        std::ranges::stable_sort(merged.minority, newest_first);
        done(std::move(merged));
    }
};

}  // namespace

void index_break(client_core& core, const std::string& resource, std::int64_t wall_ms,
                 break_report report, std::function<void(result<break_report>)> done) {
    const std::string key = index_key(core.config());
    // Ranks 0 .. -(length + 1): all but the newest audit_index_length. One std::to_string of the
    // negative rank ("-1001"), not "-" + std::to_string(...): GCC 12 flags that operator+,
    // inlined in a Release build, with a false -Werror=restrict.
    const std::string last_dropped =
        std::to_string(-static_cast<long long>(audit_index_length) - 1);
    core.probe(
        {{"ZADD", key, std::to_string(wall_ms), resource},
         {"ZREMRANGEBYRANK", key, "0", last_dropped}},
        [report = std::move(report), done = std::move(done)](auto) mutable {
            done(std::move(report));
        },
        key_slot(key));
}

void audit_everything(client_core& core, std::size_t limit,
                      std::function<void(result<audit_log>)> done) {
    auto walk = std::make_shared<audit_walk>(audit_walk{core, limit, std::move(done), {}, {}});
    walk->merged.quorum = quorum(core.node_count());
    const std::string key = index_key(core.config());
    core.probe(
        {{"ZREVRANGE", key, "0", std::to_string(limit - 1)}},
        [walk](result<std::vector<node_probe>> probes) {
            if (!probes) return walk->done(failure{std::move(probes).error()});
            // Every resource any node names: a break that reached one node only
            // is shown too (as a minority entry).
            std::set<std::string> names;
            for (const auto& p : *probes) {
                walk->merged.nodes.push_back(
                    {p.node, p.answered ? node_status::ok : node_status::unreachable,
                     p.answered ? first_error(p) : p.cause});
                if (!p.answered || p.replies.size() != 1) continue;
                for (const auto& r : p.replies.front().elements) names.insert(r.text);
            }
            walk->resources.assign(names.begin(), names.end());
            walk->next(walk);
        },
        key_slot(key));
}

}  // namespace redlock::detail
