// redlock_load: drives the library against real nodes from a config file,
// beside a raw client that sends the same commands with no lock logic (the
// ceiling), and writes what it measured as JSON. See docs/benchmarks.md.
#include "alloc_counter.hpp"
#include "load/figures.hpp"
#include "load/kinds_driver.hpp"
#include "load/lib_driver.hpp"
#include "load/node_stats.hpp"
#include "load/phase.hpp"
#include "load/raw_driver.hpp"
#include "load/raw_uv_driver.hpp"
#include "load/results.hpp"
#include "load/runner.hpp"
#include "redlock/config.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace redlock::bench;
using json = nlohmann::ordered_json;
using std::chrono::milliseconds;

auto make_driver(const std::string& mode, const redlock::client_config& config,
                 const redlock::client_config* baseline, workload load) -> std::unique_ptr<driver> {
    // Each mode locks its own keys, of the same length: a key one mode left
    // behind (a release that timed out) never refuses another mode's SET.
    if (mode == "lib") {
        load.resource_prefix = "bench-lib-";
        if (load.contended && (load.readers > 0 || load.permits > 0))
            return kinds_driver::create(config, load);
        return lib_driver::create(config, load);
    }
    if (mode == "lib-baseline" && baseline != nullptr) {  // the same locks on other members
        load.resource_prefix = "bench-bas-";
        return lib_driver::create(*baseline, load);
    }
    if (mode == "lib-shared" || mode == "lib-shared-one") {  // readers
        load.shared = true;
        load.one_resource = mode == "lib-shared-one";
        load.resource_prefix = load.one_resource ? "bench-sh1-" : "bench-shr-";
        return lib_driver::create(config, load);
    }
    if (mode == "raw") {
        load.resource_prefix = "bench-raw-";
        return raw_driver::create(config, load);
    }
    if (mode == "raw-hiredis") {
        load.resource_prefix = "bench-rhi-";
        return raw_uv_driver::create(config, load);
    }
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    options opt;
    // Before anything is allocated that the measured phases could free.
    for (int i = 1; i < argc; ++i) {
        if (std::string_view{argv[i]} == "--heap-bytes") track_heap_bytes();
    }
    CLI::App app{
        "Drives the redlock library against real nodes, beside a raw client that sends the same "
        "commands without lock logic (the ceiling), and reports both."};
    app.add_option("--config", opt.config, "cluster config (JSON)")->required();
    std::string baseline_config;
    app.add_option("--baseline-config", baseline_config,
                   "with --mode lib: a second configuration (other members), measured as mode "
                   "lib-baseline in the same process, alternating with lib");
    std::string stats_config;
    app.add_option("--stats-config", stats_config,
                   "the same servers' plain ports (JSON config), for their INFO and the scripts: "
                   "required with a TLS --config, which this tool's hiredis 0.14 cannot speak; "
                   "with cluster members, every node of every cluster under \"nodes\", for "
                   "each node's commands and CPU");
    app.add_option("--mode", opt.mode,
                   "lib | raw | raw-hiredis | both (raw and lib) | all (the three) | lib-shared "
                   "(readers) | lib-shared-one (readers, all on one resource) | readers (lib and "
                   "the two reader modes)")
        ->check(CLI::IsMember({"lib", "raw", "raw-hiredis", "both", "all", "lib-shared",
                               "lib-shared-one", "readers"}));
    app.add_option("--concurrency", opt.load.concurrency, "uncontended: locks in flight")
        ->check(CLI::Range(1, 100000));
    app.add_option("--resources", opt.load.resources,
                   "uncontended: distinct resources, taken in turn by the chains (at least "
                   "--concurrency; default: one per chain). Many spread the locks over a cluster "
                   "member's slots")
        ->check(CLI::Range(1, 99999));  // "bench-lib-99999" still fits a short string
    app.add_flag("--contended", opt.load.contended,
                 "workers on one resource (library only) instead of distinct resources");
    auto* workers =
        app.add_option("--workers", opt.load.workers, "contended: blocking worker threads")
            ->check(CLI::Range(1, 1024));
    auto* readers = app.add_option("--readers", opt.load.readers,
                                   "contended: reader workers (shared locks), beside --writers")
                        ->check(CLI::Range(0, 1024))
                        ->excludes(workers);
    app.add_option("--writers", opt.load.writers,
                   "contended: writer workers (exclusive locks), beside --readers")
        ->check(CLI::Range(0, 1024))
        ->excludes(workers)
        ->needs(readers);
    app.add_option("--permits", opt.load.permits,
                   "contended: every worker takes one of this many permits (a semaphore)")
        ->check(CLI::Range(1, redlock::max_permits))
        ->excludes(readers);
    auto hold_ms = static_cast<int>(opt.load.hold.count());
    app.add_option("--hold-ms", hold_ms, "contended: how long each worker holds the lock")
        ->check(CLI::Range(0, 60000));
    auto max_wait_ms = 0;
    app.add_option("--max-wait-ms", max_wait_ms,
                   "contended: lock_options.max_wait (0: the config's retry policy)")
        ->check(CLI::Range(0, 600000));
    std::string wait_name = "config";
    app.add_option("--wait-mode", wait_name,
                   "contended: lock_options.wait: targeted | fair | broadcast | poll (retries, no "
                   "queue) | config (the config's lock.wait)")
        ->check(CLI::IsMember({"config", "targeted", "fair", "broadcast", "poll"}));
    app.add_flag("--fencing", opt.fencing, "acquire with a fencing token");
    app.add_flag("--extend", opt.extend, "one extend per cycle, between acquire and release");
    std::string raw_encoder = "hiredis";
    app.add_option("--raw-encoder", raw_encoder,
                   "raw: hiredis (its formatter: the ceiling as defined) | library (the "
                   "library's own RESP encoder: a like-for-like reference)")
        ->check(CLI::IsMember({"hiredis", "library"}));
    auto ttl_ms = static_cast<int>(opt.load.ttl.count());
    app.add_option("--ttl-ms", ttl_ms, "lock TTL")->check(CLI::Range(1, 3600000));
    app.add_option("--duration-s", opt.duration_s, "bound of each measured phase, seconds")
        ->check(CLI::Range(0.01, 3600.0));
    app.add_option("--ops", opt.ops, "bound of each measured phase, cycles started")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
    app.add_option("--warmup-s", opt.warmup_s, "bound of the warm-up phase, seconds (0: none)");
    app.add_option("--warmup-ops", opt.warmup_ops, "bound of the warm-up phase, cycles (0: none)");
    app.add_option("--repeat", opt.repeat, "measured phases per mode, alternating modes")
        ->check(CLI::Range(1, 100));
    app.add_option("--json", opt.json_path, "write the results here");
    app.add_option("--label", opt.label, "name of this run in the JSON");
    app.add_option("--progress", opt.progress, "auto (when stderr is a terminal) | always | never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    app.add_option("--sample-ms", opt.sample_ms,
                   "RSS sampling and progress period (0: neither, for callgrind)")
        ->check(CLI::Range(0, 10000));
    app.add_flag("--heap-bytes", opt.heap_bytes,
                 "also sample heap bytes in use (costs two calls per allocation)");
    CLI11_PARSE(app, argc, argv);
    opt.load.hold = milliseconds{hold_ms};
    opt.load.max_wait = milliseconds{max_wait_ms};
    opt.load.ttl = milliseconds{ttl_ms};
    opt.load.raw_library_encoder = raw_encoder == "library";
    for (const auto w : {redlock::wait_mode::targeted, redlock::wait_mode::fair,
                         redlock::wait_mode::broadcast, redlock::wait_mode::poll}) {
        if (wait_name == wait_mode_name(w)) opt.load.wait = w;
    }
    if (opt.fencing && opt.extend) {
        std::fprintf(stderr, "redlock_load: --fencing and --extend are separate variants\n");
        return 64;
    }
    opt.load.kind = opt.fencing ? variant::fencing : opt.extend ? variant::extend : variant::plain;
    const bool kinds = opt.load.readers > 0 || opt.load.permits > 0;
    if (kinds && (!opt.load.contended || opt.load.kind != variant::plain)) {
        std::fprintf(stderr, "redlock_load: --readers and --permits are contended, plain runs\n");
        return 64;
    }
    if (opt.load.readers > 0) opt.load.workers = opt.load.readers + opt.load.writers;
    if (opt.load.resources > 0 &&
        (opt.load.contended || opt.load.resources < opt.load.concurrency)) {
        std::fprintf(stderr,
                     "redlock_load: --resources is for uncontended runs, at least "
                     "--concurrency of them\n");
        return 64;
    }

    std::string command = "redlock_load";
    for (int i = 1; i < argc; ++i) command += std::string{" "} + argv[i];
    const double load_before = load_average();

    auto config = redlock::load_config(opt.config);
    if (!config) {
        std::fprintf(stderr, "redlock_load: %s\n", config.error().what().c_str());
        return 78;
    }
    if (config->tls && (stats_config.empty() || opt.mode != "lib")) {
        // The raw modes and the server figures go through hiredis 0.14, which has no TLS.
        std::fprintf(stderr, "redlock_load: a TLS config runs --mode lib, with --stats-config\n");
        return 64;
    }
    const bool routed = !config->clusters.empty() || !config->sentinel_masters.empty();
    if (routed && opt.mode != "lib" && opt.mode != "lib-shared" && opt.mode != "lib-shared-one") {
        // The raw clients send every round to every node of `nodes`: no routing.
        std::fprintf(stderr, "redlock_load: cluster and Sentinel members run the lib modes only\n");
        return 64;
    }
    if (routed && stats_config.empty()) {
        std::fprintf(stderr,
                     "redlock_load: note: the server figures cover `nodes` only; name "
                     "every cluster node in a --stats-config to count theirs\n");
    }
    std::optional<redlock::client_config> baseline;
    if (!baseline_config.empty()) {
        if (opt.mode != "lib" || opt.load.contended) {
            std::fprintf(stderr,
                         "redlock_load: --baseline-config goes with an uncontended "
                         "--mode lib\n");
            return 64;
        }
        auto loaded = redlock::load_config(baseline_config);
        if (!loaded) {
            std::fprintf(stderr, "redlock_load: %s\n", loaded.error().what().c_str());
            return 78;
        }
        baseline = std::move(*loaded);
    }
    auto stats_source = stats_config.empty() ? config : redlock::load_config(stats_config);
    if (!stats_source) {
        std::fprintf(stderr, "redlock_load: %s\n", stats_source.error().what().c_str());
        return 78;
    }
    auto nodes = node_stats::connect(*stats_source);
    if (!nodes) return 69;
    if (!nodes->load_scripts()) return 69;

    std::vector<std::string> modes;
    if (opt.mode == "both") {
        modes = {"raw", "lib"};
    } else if (opt.mode == "all") {
        modes = {"raw", "raw-hiredis", "lib"};
    } else if (opt.mode == "readers") {
        modes = {"lib", "lib-shared", "lib-shared-one"};
    } else if (baseline) {
        modes = {"lib", "lib-baseline"};
    } else {
        modes = {opt.mode};
    }
    if (opt.load.contended) {
        // The raw modes have no waiting or retrying to compare with.
        modes.erase(std::remove_if(modes.begin(), modes.end(),
                                   [](const std::string& m) { return m != "lib"; }),
                    modes.end());
        if (modes.empty()) modes = {"lib"};
    }

    const long rss_start_kib = rss_kib();
    std::vector<std::unique_ptr<driver>> drivers;
    std::vector<mode_totals> totals(modes.size());
    for (std::size_t i = 0; i < modes.size(); ++i) {
        drivers.push_back(
            make_driver(modes[i], *config, baseline ? &*baseline : nullptr, opt.load));
        if (!drivers.back()) return 69;
        totals[i].name = modes[i];
    }

    runner run{opt, *nodes};
    for (int rep = 0; rep < opt.repeat; ++rep) {
        // ABBA order: neither mode always runs first (on a warmer or cooler machine).
        for (std::size_t k = 0; k < modes.size(); ++k) {
            const std::size_t i = rep % 2 == 0 ? k : modes.size() - 1 - k;
            run.run(*drivers[i], totals[i], rep);
        }
    }
    std::vector<json> extra(modes.size(), json::object());
    for (std::size_t i = 0; i < modes.size(); ++i) drivers[i]->add_json(extra[i]);
    drivers.clear();

    json out;
    out["label"] = opt.label;
    out["command"] = command;
    out["load_average_before"] = load_before;
    out["load_average_after"] = load_average();
    out["finished_utc"] = utc_now();
    out["config"] = opt.config;
    out["nodes"] = config->nodes.size();
    out["clusters"] = config->clusters.size();
    out["sentinel_masters"] = config->sentinel_masters.size();
    if (opt.load.resources > 0) out["resources"] = opt.load.resources;
    out["workload"] = opt.load.contended ? "contended" : "uncontended";
    out["variant"] = to_string(opt.load.kind);
    out["concurrency"] = opt.load.contended ? opt.load.workers : opt.load.concurrency;
    if (opt.load.contended) {
        out["hold_ms"] = opt.load.hold.count();
        out["max_wait_ms"] = opt.load.max_wait.count();
        out["wait_mode"] = wait_mode_name(opt.load.wait.value_or(config->lock.wait));
        if (opt.load.readers > 0) out["readers"] = opt.load.readers;
        if (opt.load.readers > 0) out["writers"] = opt.load.writers;
        if (opt.load.permits > 0) out["permits"] = opt.load.permits;
    }
    out["ttl_ms"] = opt.load.ttl.count();
    out["request_timeout_ms"] = config->request_timeout.count();
    out["duration_s"] = opt.duration_s;
    out["ops_bound"] = opt.ops;
    out["repeat"] = opt.repeat;
    out["modes_in_process"] = modes.size();
    out["redis_version"] = nodes->redis_version();
    out["rss_start_kib"] = rss_start_kib;
    out["ru_maxrss_kib"] = max_rss_kib();
    json results = json::object();
    for (std::size_t i = 0; i < totals.size(); ++i) {
        results[totals[i].name] = mode_json(totals[i], opt.load, nodes->names());
        results[totals[i].name].update(extra[i]);
    }
    out["results"] = results;
    if (results.contains("lib") && results.contains("lib-baseline")) {
        // Repetition by repetition: neighbours in time, so the machine's load
        // moves both alike.
        const auto& a = results["lib"]["ops_per_s_reps"];
        const auto& b = results["lib-baseline"]["ops_per_s_reps"];
        json per_rep = json::array();
        for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
            per_rep.push_back(b[i].get<double>() > 0 ? a[i].get<double>() / b[i].get<double>() : 0);
        out["baseline_config"] = baseline_config;
        out["lib_vs_baseline"] = json{{"ops_per_s_reps", per_rep}};
    }
    if (results.contains("lib") && results.contains("raw")) {
        const auto& lib = results["lib"];
        const auto& raw = results["raw"];
        const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
        out["lib_vs_raw"] = json{
            {"ops_per_s", ratio(lib["ops_per_s"], raw["ops_per_s"])},
            {"p50", ratio(lib["latency_ns"]["p50"], raw["latency_ns"]["p50"])},
            {"p99", ratio(lib["latency_ns"]["p99"], raw["latency_ns"]["p99"])},
            {"client_cpu_per_lock",
             ratio(lib["client_cpu_us_per_lock"], raw["client_cpu_us_per_lock"])},
            {"commands_per_lock", ratio(lib["commands_per_lock"], raw["commands_per_lock"])},
        };
    }

    // A short human summary on stdout.
    for (const auto& t : totals) {
        print_summary(t, results[t.name], opt.label, out["concurrency"].get<int>(),
                      opt.load.contended);
    }
    if (!opt.json_path.empty()) {
        std::ofstream f{opt.json_path};
        f << out.dump(2) << '\n';
        if (!f) {
            std::fprintf(stderr, "redlock_load: cannot write %s\n", opt.json_path.c_str());
            return 73;
        }
    }
    return 0;
}
