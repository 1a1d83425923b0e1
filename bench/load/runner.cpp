#include "load/runner.hpp"

#include "alloc_counter.hpp"
#include "load/figures.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace redlock::bench {

using std::chrono::milliseconds;

runner::runner(const options& opt, node_stats& nodes) : opt_{opt}, nodes_{nodes} {
    tty_ = opt.progress == "always" || (opt.progress == "auto" && isatty(STDERR_FILENO) != 0);
    if (opt.load.contended) stats_.set_workers(static_cast<std::size_t>(opt.load.workers));
}

void runner::run(driver& d, mode_totals& t, int rep) {
    const int slots = opt_.load.contended ? opt_.load.workers : opt_.load.concurrency;
    if (t.rss_before_kib == 0) {
        t.rss_before_kib = rss_kib();
        t.heap_before = heap_bytes();
    }
    if (opt_.warmup_ops > 0 && opt_.warmup_s > 0) {
        phase(d, t, slots, opt_.warmup_ops, opt_.warmup_s, nullptr);
    }
    const server_snapshot before = nodes_.snapshot();
    const double cpu0 = cpu_now();
    const std::uint64_t allocs0 = allocations();
    const std::uint64_t writes0 = d.writes();
    const std::uint64_t requests0 = d.requests();
    const std::uint64_t handoffs0 = d.handoffs();
    const auto t0 = steady::now();
    const std::string label =
        t.name + " rep " + std::to_string(rep + 1) + "/" + std::to_string(opt_.repeat);
    d.measuring(true);
    phase(d, t, slots, opt_.ops, opt_.duration_s, &label);
    d.measuring(false);
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    const std::uint64_t allocs1 = allocations();
    const std::uint64_t writes1 = d.writes();
    const std::uint64_t requests1 = d.requests();
    const std::uint64_t handoffs1 = d.handoffs();
    const double cpu1 = cpu_now();
    const server_snapshot after = nodes_.snapshot();

    const std::uint64_t completed = stats_.completed.load();
    t.cycle.merge(stats_.cycle);
    t.acquire.merge(stats_.acquire);
    t.ops_per_s.push_back(static_cast<double>(completed) / seconds);
    t.completed += completed;
    t.failed += stats_.failed.load();
    t.seconds += seconds;
    t.client_cpu += cpu1 - cpu0;
    t.server_cpu += after.cpu_seconds - before.cpu_seconds;
    t.allocs += allocs1 - allocs0;
    t.writes += writes1 - writes0;
    t.requests += requests1 - requests0;
    t.handoffs += handoffs1 - handoffs0;
    const handoff_gaps gaps = handoff_gaps_of(stats_.holds());
    for (const std::uint64_t ns : gaps.nanos) t.handoff.record(ns);
    for (const std::uint64_t ns : gaps.held) t.held.record(ns);
    t.overlaps += gaps.overlaps;
    for (const auto& [kind, n] : stats_.errors()) t.errors[kind] += n;
    const auto per_worker = stats_.per_worker();
    t.per_worker.resize(per_worker.size());
    for (std::size_t i = 0; i < per_worker.size(); ++i) t.per_worker[i] += per_worker[i];
    for (const auto& [name, n] : after.calls) {
        const auto was = before.calls.find(name);
        t.calls[name] += n - (was == before.calls.end() ? 0 : was->second);
    }
    t.calls.erase("info");  // our own snapshots
    t.per_node.resize(after.nodes.size());
    for (std::size_t i = 0; i < after.nodes.size() && i < before.nodes.size(); ++i) {
        node_snapshot& mine = t.per_node[i];
        mine.cpu_seconds += after.nodes[i].cpu_seconds - before.nodes[i].cpu_seconds;
        for (const auto& [name, n] : after.nodes[i].calls) {
            if (name == "info") continue;
            const auto was = before.nodes[i].calls.find(name);
            mine.calls[name] += n - (was == before.nodes[i].calls.end() ? 0 : was->second);
        }
    }
}

void runner::phase(driver& d, mode_totals& t, int slots, std::uint64_t ops, double seconds,
                   const std::string* label) {
    stats_.reset();
    const auto start = steady::now();
    const auto deadline = start + std::chrono::duration_cast<steady::duration>(
                                      std::chrono::duration<double>{seconds});
    gate_.open(ops, deadline, slots);
    d.start(gate_, stats_);
    // Bounded: a phase that has not drained 30 s past its deadline is a hang.
    const auto hard_limit = deadline + std::chrono::seconds{30};
    const milliseconds slice{opt_.sample_ms > 0 ? opt_.sample_ms : 1000};
    auto next_line = start + milliseconds{500};
    while (!gate_.wait_for(slice)) {
        const auto now = steady::now();
        if (opt_.sample_ms > 0) sample(t);
        if (label != nullptr && tty_ && now >= next_line) {
            progress(*label, now - start);
            next_line = now + milliseconds{500};
        }
        if (now > hard_limit) {
            std::fprintf(stderr, "\nredlock_load: %s: the phase did not end; giving up\n",
                         d.name().c_str());
            std::_Exit(70);
        }
    }
    d.finish();
    sample(t);
    if (label != nullptr && tty_) {
        progress(*label, steady::now() - start);
        std::fputc('\n', stderr);
    }
}

void runner::sample(mode_totals& t) {
    t.rss_peak_kib = std::max(t.rss_peak_kib, rss_kib());
    if (opt_.heap_bytes) t.heap_peak = std::max(t.heap_peak, heap_bytes());
}

void runner::progress(const std::string& label, steady::duration elapsed) {
    const double secs = std::chrono::duration<double>(elapsed).count();
    const auto ms = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e6; };
    std::fprintf(stderr, "\r%-24s %9.0f ops/s  p50 %7.3f ms  p99 %7.3f ms  errors %llu   ",
                 label.c_str(), static_cast<double>(stats_.completed.load()) / secs,
                 ms(stats_.cycle.percentile(0.5)), ms(stats_.cycle.percentile(0.99)),
                 static_cast<unsigned long long>(stats_.failed.load()));
    std::fflush(stderr);
}

}  // namespace redlock::bench
