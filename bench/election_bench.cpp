// redlock_election_bench: what leader election costs. Issue 28, item 6;
// docs/benchmarks.md, "Leader election: failover and overhead".
//
//   redlock_election_bench --config five.json [--ttl-ms 1000] [--trials 30]
//                          [--iterations 200] [--no-failover] [--no-overhead]
//                          [--only campaign|by-hand|fenced|plain]
//
// Failover (election_failover.cpp): K trials, each a leader *process* (this
// binary with --lead NAME) that campaigns and leads with TTL T, a standby in
// this process that campaigns and waits in line, and a SIGKILL of the leader
// at a random moment; per trial, the time from the kill to the standby's
// campaign returning, and to the moment a majority of the nodes let the dead
// leader's key expire (read with PTTL right after the kill).
//
// Overhead (election_overhead.cpp): uncontended campaign + resign against
// acquire + release with the same TTL (the campaign's lock by hand: fencing,
// auto_renew, fair; fencing alone; plain), N cycles each in turn (ABCD DCBA),
// latency medians and the client's requests per step; and leader() reads.
//
// One JSON line on stdout, one human line on stderr; exit 1 when a standby
// did not win, won no higher term, or a cycle failed.
#include "election_bench.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <unistd.h>

auto main(int argc, char** argv) -> int {
    using redlock::bench::election_options;
    election_options o;
    bool no_failover = false;
    bool no_overhead = false;
    CLI::App app{"Leader election: failover time after a SIGKILL, and the API's overhead"};
    app.add_option("--config", o.config, "JSON config of the nodes")->check(CLI::ExistingFile);
    app.add_option("--ttl-ms", o.ttl_ms, "the leadership's TTL")->check(CLI::Range(100, 60'000));
    app.add_option("--trials", o.trials, "failover trials")->check(CLI::Range(1, 1000));
    app.add_option("--max-seconds", o.max_seconds, "no failover trial starts past this")
        ->check(CLI::Range(1, 3600));
    app.add_option("--iterations", o.iterations, "overhead: counted cycles of each variant")
        ->check(CLI::Range(1, 100'000));
    app.add_option("--warmup", o.warmup, "overhead: cycles of each variant not counted")
        ->check(CLI::Range(0, 10'000));
    app.add_option("--only", o.only, "overhead: this variant alone (callgrind)")
        ->check(CLI::IsMember({"campaign", "by-hand", "fenced", "plain"}));
    app.add_option("--request-timeout-ms", o.request_timeout_ms,
                   "overrides the config's request_timeout_ms (0: keep it)")
        ->check(CLI::Range(0, 10'000));
    app.add_flag("--no-failover", no_failover, "skip the failover trials");
    app.add_flag("--no-overhead", no_overhead, "skip the overhead cycles");
    app.add_option("--lead", o.lead, "helper mode: lead this election until killed");
    app.add_option("--lead-life-s", o.lead_life_s, "helper mode: resign after this long")
        ->check(CLI::Range(1, 600));
    CLI11_PARSE(app, argc, argv);
    o.failover = !no_failover;
    o.overhead = !no_overhead;

    auto config = redlock::load_config(o.config);
    if (!config) {
        std::fprintf(stderr, "election_bench: %s\n", config.error().what().c_str());
        return 2;
    }
    if (o.request_timeout_ms > 0)
        config->request_timeout = std::chrono::milliseconds{o.request_timeout_ms};
    o.request_timeout_ms = static_cast<int>(config->request_timeout.count());
    if (!o.lead.empty()) return redlock::bench::lead_until_killed(o, *config);
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 2;
    o.self.assign(self, static_cast<std::size_t>(n));

    nlohmann::ordered_json out{{"nodes", config->nodes.size()},
                               {"ttl_ms", o.ttl_ms},
                               {"request_timeout_ms", o.request_timeout_ms},
                               {"renew_fraction", config->lock.renew_fraction},
                               {"waiter_ttl_ms", config->lock.waiter_ttl.count()}};
    bool ok = true;
    if (o.overhead) {
        out["overhead"] = redlock::bench::overhead_rounds(o, *config);
        ok = out["overhead"]["ok"].get<bool>();
    }
    if (o.failover) {
        out["failover"] = redlock::bench::failover_trials(o, *config);
        ok = out["failover"]["ok"].get<bool>() && ok;
    }
    out["ok"] = ok;
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
    if (o.failover && out["failover"].contains("failover_ms")) {
        const auto& f = out["failover"];
        std::fprintf(stderr,
                     "election_bench: failover over %d trials: p50 %.1f ms, p99 %.1f ms "
                     "(TTL %d ms); after the majority's expiry p50 %.1f ms, p99 %.1f ms\n",
                     f["trials_done"].get<int>(), f["failover_ms"]["p50"].get<double>(),
                     f["failover_ms"]["p99"].get<double>(), o.ttl_ms,
                     f["after_expiry_ms"]["p50"].get<double>(),
                     f["after_expiry_ms"]["p99"].get<double>());
    }
    if (o.overhead && out["overhead"].contains("ratios")) {
        const auto& r = out["overhead"]["ratios"];
        std::fprintf(
            stderr,
            "election_bench: campaign / acquire (fencing), medians: take %.2fx, "
            "cycle %.2fx; against a plain acquire: take %.2fx, cycle %.2fx\n",
            r["campaign/fenced"]["take"].get<double>(), r["campaign/fenced"]["cycle"].get<double>(),
            r["campaign/plain"]["take"].get<double>(), r["campaign/plain"]["cycle"].get<double>());
    }
    std::fprintf(stderr, "election_bench: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
