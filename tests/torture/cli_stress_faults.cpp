#include "cli_stress_faults.hpp"

namespace redlock_torture {

using namespace std::chrono_literals;

namespace {

auto engine_settings(std::size_t node_count, const cli_fault_schedule::settings& limits)
    -> injector_settings {
    injector_settings s;
    s.persistent.assign(node_count, true);
    s.impairing_latency = 0ms;  // every latency it adds fails requests
    s.max_impaired = limits.max_faulted;
    s.mix = {.kill = 10, .freeze = 15, .blackhole = 20, .latency = 20};
    s.first_fault = 300ms;
    s.max_gap = 400ms;
    s.latencies.clear();
    for (auto ms = limits.latency_min; ms <= limits.latency_max; ms += 1ms)
        s.latencies.push_back(ms);
    s.one_draw_per_fault = true;
    s.lone_latency = true;
    s.aimed_drops = true;
    return s;
}

}  // namespace

cli_fault_schedule::cli_fault_schedule(std::vector<redlock_test::redis_server>& nodes,
                                       std::vector<redlock_test::fault_proxy>& proxies,
                                       settings limits, std::uint64_t seed, std::FILE* log)
    : engine_{nodes, proxies, engine_settings(nodes.size(), limits), seed, log} {}

auto cli_fault_schedule::counts() const -> std::map<std::string, std::uint64_t> {
    auto all = engine_.counts();
    all["restart_failed"] = engine_.restart_failures();
    return all;
}

auto cli_fault_schedule::injected() const -> std::uint64_t {
    std::uint64_t n = 0;
    for (const auto& [kind, count] : engine_.counts()) {
        if (kind != "skipped") n += count;
    }
    return n;
}

}  // namespace redlock_torture
