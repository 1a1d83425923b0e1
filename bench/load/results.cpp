#include "load/results.hpp"

#include "load/figures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace redlock::bench {

namespace {

using json = nlohmann::ordered_json;

/// Commands the client sent itself, as opposed to those a script ran on the
/// node (INFO commandstats counts both): the names clients send here. SET is
/// also called by the fencing scripts and by those of readers and permits, so
/// with those it counts as a script call (a writer's own SETs beside readers
/// too). client_requests_per_lock, the client's own count, cross-checks it.
[[nodiscard]] auto is_top_level(const std::string& command, bool set_in_scripts) -> bool {
    if (command == "set") return !set_in_scripts;
    return command == "evalsha" || command == "eval" || command == "script" || command == "auth" ||
           command == "ping";
}

/// The contended figures of the hand-off, added to `out`.
void contended_json(json& out, const mode_totals& t, const workload& load, double locks) {
    // One holder at a time for an exclusive lock, `permits` for a semaphore;
    // readers share, so theirs has no such bound.
    const int holders = load.permits > 0 ? load.permits : 1;
    if (load.hold.count() > 0 && load.readers == 0) {
        const double bound = 1000.0 * holders / static_cast<double>(load.hold.count());
        out["bound_share"] = out["ops_per_s"].get<double>() / bound;
    }
    out["handoffs_per_lock"] = static_cast<double>(t.handoffs) / locks;
    if (t.handoff.count() > 0) out["handoff_ns"] = latency_json(t.handoff);
    if (t.held.count() > 0) out["held_ns"] = latency_json(t.held);
    if (load.readers == 0 && load.permits == 0) out["handoff_overlaps"] = t.overlaps;
}

}  // namespace

auto wait_mode_name(wait_mode w) -> const char* {
    switch (w) {
        case wait_mode::targeted:
            return "targeted";
        case wait_mode::fair:
            return "fair";
        case wait_mode::broadcast:
            return "broadcast";
        case wait_mode::poll:
            return "poll";
    }
    return "?";
}

auto mode_json(const mode_totals& t, const workload& load,
               const std::vector<std::string>& node_names) -> json {
    const variant kind = load.kind;
    const double locks = static_cast<double>(std::max<std::uint64_t>(t.completed, 1));
    const bool set_in_scripts = kind == variant::fencing || t.name.starts_with("lib-shared") ||
                                load.readers > 0 || load.permits > 0;
    std::uint64_t top = 0;
    std::uint64_t all = 0;
    json calls = json::object();
    for (const auto& [name, n] : t.calls) {
        if (n == 0) continue;
        calls[name] = n;
        all += n;
        if (is_top_level(name, set_in_scripts)) top += n;
    }
    json reps = json::array();
    for (const double r : t.ops_per_s) reps.push_back(std::round(r));
    const long rss_delta = std::max(0L, t.rss_peak_kib - t.rss_before_kib);
    const int in_flight = load.contended ? load.workers : load.concurrency;
    json out{
        {"ops_per_s", std::round(median(t.ops_per_s))},
        {"ops_per_s_reps", reps},
        {"completed", t.completed},
        {"failed", t.failed},
        {"seconds", t.seconds},
        {"latency_ns", latency_json(t.cycle)},
        {"acquire_latency_ns", latency_json(t.acquire)},
        {"errors", t.errors},
        {"redis_commands", calls},
        {"commands_per_lock", static_cast<double>(top) / locks},
        {"client_requests_per_lock", static_cast<double>(t.requests) / locks},
        {"redis_calls_per_lock", static_cast<double>(all) / locks},
        {"client_cpu_us_per_lock", t.client_cpu * 1e6 / locks},
        {"server_cpu_us_per_lock", t.server_cpu * 1e6 / locks},
        {"allocs_per_lock", static_cast<double>(t.allocs) / locks},
        {"socket_writes_per_lock", static_cast<double>(t.writes) / locks},
        {"rss_before_kib", t.rss_before_kib},
        {"rss_peak_kib", t.rss_peak_kib},
        {"rss_bytes_per_in_flight", static_cast<double>(rss_delta) * 1024.0 / in_flight},
    };
    if (t.heap_peak > 0) {
        out["heap_before_bytes"] = t.heap_before;
        out["heap_peak_bytes"] = t.heap_peak;
        out["heap_bytes_per_in_flight"] =
            static_cast<double>(std::max<std::int64_t>(0, t.heap_peak - t.heap_before)) / in_flight;
    }
    if (!t.per_worker.empty()) {
        out["locks_per_worker"] = t.per_worker;
        const auto [lo, hi] = std::minmax_element(t.per_worker.begin(), t.per_worker.end());
        out["busiest_worker_share"] = static_cast<double>(*hi) / locks;
        out["idlest_worker_share"] = static_cast<double>(*lo) / locks;
        out["jain"] = jain_index(t.per_worker);
    }
    if (load.contended) contended_json(out, t, load, locks);
    // Each node's part: which shard served how much (a cluster member's slots
    // spread the locks), and what a lock cost there.
    json nodes = json::array();
    for (std::size_t i = 0; i < t.per_node.size(); ++i) {
        std::uint64_t node_top = 0;
        std::uint64_t node_all = 0;
        for (const auto& [name, n] : t.per_node[i].calls) {
            node_all += n;
            if (is_top_level(name, set_in_scripts)) node_top += n;
        }
        nodes.push_back(json{
            {"node", i < node_names.size() ? node_names[i] : std::to_string(i)},
            {"commands", node_top},
            {"commands_share",
             top > 0 ? static_cast<double>(node_top) / static_cast<double>(top) : 0.0},
            {"redis_calls", node_all},
            {"cpu_s", t.per_node[i].cpu_seconds},
            {"cpu_us_per_lock", t.per_node[i].cpu_seconds * 1e6 / locks},
        });
    }
    out["per_node"] = nodes;
    return out;
}

void print_summary(const mode_totals& t, const json& r, const std::string& label, int concurrency,
                   bool contended) {
    std::printf(
        "%-14s %-11s c=%-5d %9.0f ops/s  p50 %8.3f ms  p99 %8.3f ms  cmds/lock %5.2f  "
        "cpu %6.2f us/lock  allocs %6.1f/lock  failed %llu\n",
        t.name.c_str(), label.c_str(), concurrency, r["ops_per_s"].get<double>(),
        r["latency_ns"]["p50"].get<double>() / 1e6, r["latency_ns"]["p99"].get<double>() / 1e6,
        r["commands_per_lock"].get<double>(), r["client_cpu_us_per_lock"].get<double>(),
        r["allocs_per_lock"].get<double>(), static_cast<unsigned long long>(t.failed));
    if (r.contains("kinds")) std::printf("  kinds: %s\n", r["kinds"].dump().c_str());
    if (!contended) return;
    // Only the figures this run has: readers have no bound, kinds no hand-off latency.
    std::printf("  contended: %.0f grants/s", r["ops_per_s"].get<double>());
    if (r.contains("bound_share"))
        std::printf(" = %.1f %% of the hold-time bound", r["bound_share"].get<double>() * 100);
    if (r.contains("handoff_ns")) {
        std::printf("  hand-off p50 %.3f ms  p99 %.3f ms",
                    r["handoff_ns"]["p50"].get<double>() / 1e6,
                    r["handoff_ns"]["p99"].get<double>() / 1e6);
    }
    std::printf("  requests/grant %.2f  script calls/grant %.2f  handoffs/grant %.2f",
                r["client_requests_per_lock"].get<double>(),
                r["redis_calls_per_lock"].get<double>(), r["handoffs_per_lock"].get<double>());
    if (r.contains("jain")) std::printf("  Jain %.3f", r["jain"].get<double>());
    std::printf("\n");
}

}  // namespace redlock::bench
