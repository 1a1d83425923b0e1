// Builds the report's throughput and latency charts from the main matrix of load runs.
#include "report_charts.hpp"

#include "report_svg.hpp"

#include <utility>

namespace redlock::bench {

namespace {

/// `key` of `mode` at each concurrency of the matrix.
auto throughput_series(const results& r, std::string name, std::string color, bool dashed,
                       const char* mode, const char* key) -> series {
    series s{std::move(name), std::move(color), dashed, {}};
    for (const int c : concurrencies) {
        if (const json* m = r.mode(label_of(c), mode)) s.points.emplace_back(c, field(m, key));
    }
    return s;
}

/// Percentile `pct` of the cycle latency of `mode` at each concurrency, in ms.
auto latency_series(const results& r, std::string name, std::string color, bool dashed,
                    const char* mode, const char* pct) -> series {
    series s{std::move(name), std::move(color), dashed, {}};
    for (const int c : concurrencies) {
        if (const json* m = r.mode(label_of(c), mode))
            s.points.emplace_back(c, percentile(m, "latency_ns", pct) / 1e6);
    }
    return s;
}

}  // namespace

auto throughput_svg(const results& r) -> std::string {
    chart c{"Locks per second (acquire + release) by locks in flight",
            "locks in flight (distinct resources, one client)",
            "completed cycles per second",
            false,
            {1, 4, 16, 64, 256, 1024},
            {}};
    c.lines.push_back(throughput_series(r, "library", "#1f77b4", false, "lib", "ops_per_s"));
    c.lines.push_back(
        throughput_series(r, "raw ceiling (epoll)", "#d62728", true, "raw", "ops_per_s"));
    c.lines.push_back(
        throughput_series(r, "hiredis async + libuv", "#7f7f7f", true, "raw-hiredis", "ops_per_s"));
    c.lines.back().markers_only = true;
    return render(c);
}

auto latency_svg(const results& r) -> std::string {
    chart c{"Acquire + release latency by locks in flight",
            "locks in flight (distinct resources, one client)",
            "milliseconds (log scale)",
            true,
            {1, 4, 16, 64, 256, 1024},
            {}};
    const std::pair<const char*, const char*> pcts[] = {
        {"p50", "#1f77b4"}, {"p90", "#2ca02c"}, {"p99", "#ff7f0e"}, {"p999", "#9467bd"}};
    for (const auto& [p, color] : pcts) {
        c.lines.push_back(latency_series(r, std::string{"library "} + p, color, false, "lib", p));
    }
    for (const auto& [p, color] : pcts) {
        if (std::string{p} == "p90" || std::string{p} == "p999") continue;
        c.lines.push_back(latency_series(r, std::string{"raw "} + p, color, true, "raw", p));
    }
    return render(c);
}

}  // namespace redlock::bench
