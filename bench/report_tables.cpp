// Builds the report's markdown tables of load runs and micro benchmarks from `results`.
#include "report_tables.hpp"

#include "report_callgrind.hpp"
#include "report_format.hpp"
#include "report_markdown_table.hpp"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <tuple>
#include <vector>

namespace redlock::bench {

auto command_of(const results& r, const std::string& label) -> std::string {
    const json* run = r.run(label);
    if (run == nullptr) return "–";
    // The command as a reader would type it: without --label and --json.
    std::istringstream words{(*run)["command"].get<std::string>()};
    std::string word;
    std::string shown = "build/bench-release/bench/redlock_load";
    words >> word;  // the program
    while (words >> word) {
        if (word == "--label" || word == "--json") {
            words >> word;
            continue;
        }
        shown += " " + word;
    }
    return code(shown);
}

namespace {

/// A row of the variants and nodes tables: run `label`, library beside raw.
void comparison_row(const results& r, table& t, const std::string& first, const std::string& label,
                    int c) {
    const json* lib = r.mode(label, "lib");
    const json* raw = r.mode(label, "raw");
    if (lib == nullptr || raw == nullptr) return;
    t.row({first, std::to_string(c), count(field(lib, "ops_per_s")), count(field(raw, "ops_per_s")),
           ratio(field(lib, "ops_per_s"), field(raw, "ops_per_s")),
           ms((*lib)["latency_ns"]["p50"]) + " / " + ms((*lib)["latency_ns"]["p99"]),
           ms((*raw)["latency_ns"]["p50"]),
           ratio(percentile(lib, "latency_ns", "p50"), percentile(raw, "latency_ns", "p50")),
           sig3(field(lib, "commands_per_lock")) + " (" + sig3(field(lib, "redis_calls_per_lock")) +
               ")",
           sig3(field(lib, "client_cpu_us_per_lock")) + " / " +
               sig3(field(lib, "server_cpu_us_per_lock"))});
}

}  // namespace

auto best_lib_throughput(const results& r) -> std::pair<double, int> {
    std::pair<double, int> best{0, 0};
    for (const int c : concurrencies) {
        const double v = field(r.mode(label_of(c), "lib"), "ops_per_s");
        if (v > best.first) best = {v, c};
    }
    return best;
}

auto targets_table(const results& r) -> std::string {
    table t{{"Target", "Goal", "Measured", "Verdict", "Reproduce"}, "lllll"};
    const auto verdict = [](bool met) { return met ? "met" : "**missed**"; };
    if (const json* lib = r.mode("c1", "lib"); lib != nullptr) {
        const json* raw = r.mode("c1", "raw");
        const double a = percentile(lib, "latency_ns", "p50");
        const double b = percentile(raw, "latency_ns", "p50");
        t.row({"1 in flight: library p50 ÷ raw floor p50", "≤ 1.15",
               ratio(a, b) + " (" + sig3(a / 1e6) + " vs " + sig3(b / 1e6) + " ms)",
               verdict(b > 0 && a / b <= 1.15), command_of(r, "c1")});
    }
    for (const int c : {64, 256}) {
        const json* lib = r.mode(label_of(c), "lib");
        const json* raw = r.mode(label_of(c), "raw");
        if (lib == nullptr || raw == nullptr) continue;
        const double a = field(lib, "ops_per_s");
        const double b = field(raw, "ops_per_s");
        t.row({std::to_string(c) + " in flight: library ÷ raw throughput", "≥ 0.50",
               ratio(a, b) + " (" + count(a) + " vs " + count(b) + " locks/s)",
               verdict(b > 0 && a / b >= 0.5), command_of(r, label_of(c))});
    }
    if (const json* lib = r.mode("c1024", "lib"); lib != nullptr) {
        const auto [best, at] = best_lib_throughput(r);
        const double a = field(lib, "ops_per_s");
        t.row({"1024 in flight: throughput ÷ the library's best", "≥ 0.90",
               ratio(a, best) + " (" + count(a) + " vs " + count(best) + " at " +
                   std::to_string(at) + ")",
               verdict(best > 0 && a / best >= 0.9), command_of(r, "c1024")});
    }
    if (const json* mem = r.mode("mem-lib-c1024", "lib"); mem != nullptr) {
        const double per = field(mem, "rss_bytes_per_in_flight");
        const double heap = field(mem, "heap_bytes_per_in_flight");
        t.row({"client memory per in-flight lock (RSS, 1024 in flight vs idle)", "≤ 1024 B",
               count(per) + " B (heap in use: " + count(heap) + " B)", verdict(per <= 1024),
               command_of(r, "mem-lib-c1024")});
    }
    if (const double lib = instructions_per_cycle(r, "lib"), raw = instructions_per_cycle(r, "raw");
        lib > 0 && raw > 0) {
        t.row({"client instructions per cycle: library ÷ raw (callgrind)", "≤ 1.50",
               ratio(lib, raw) + " (" + count(lib) + " vs " + count(raw) + ")",
               verdict(lib / raw <= 1.5), code(r.callgrind["command"].get<std::string>())});
    }
    return t.str();
}

auto uncontended_table(const results& r) -> std::string {
    table t{{"In flight", "Library locks/s", "Raw locks/s", "Lib ÷ raw",
             "Library p50 / p90 / p99 / p99.9 ms", "Raw p50 / p90 / p99 / p99.9 ms", "p50 ratio"}};
    const auto pcts = [](const json* m) {
        const json& l = (*m)["latency_ns"];
        return ms(l["p50"]) + " / " + ms(l["p90"]) + " / " + ms(l["p99"]) + " / " + ms(l["p999"]);
    };
    for (const int c : concurrencies) {
        const json* lib = r.mode(label_of(c), "lib");
        const json* raw = r.mode(label_of(c), "raw");
        if (lib == nullptr || raw == nullptr) continue;
        t.row({std::to_string(c), count(field(lib, "ops_per_s")), count(field(raw, "ops_per_s")),
               ratio(field(lib, "ops_per_s"), field(raw, "ops_per_s")), pcts(lib), pcts(raw),
               ratio(percentile(lib, "latency_ns", "p50"), percentile(raw, "latency_ns", "p50"))});
    }
    return t.str();
}

auto costs_table(const results& r) -> std::string {
    table t{{"In flight", "Client CPU µs/lock (lib / raw)", "Servers' CPU µs/lock (lib / raw)",
             "Allocations/lock (lib / raw)", "Socket writes/lock (lib / raw)",
             "Commands/lock (lib / raw)"}};
    const auto pair = [](const json* a, const json* b, const char* key) {
        return sig3(field(a, key)) + " / " + sig3(field(b, key));
    };
    for (const int c : concurrencies) {
        const json* lib = r.mode(label_of(c), "lib");
        const json* raw = r.mode(label_of(c), "raw");
        if (lib == nullptr || raw == nullptr) continue;
        t.row({std::to_string(c), pair(lib, raw, "client_cpu_us_per_lock"),
               pair(lib, raw, "server_cpu_us_per_lock"), pair(lib, raw, "allocs_per_lock"),
               pair(lib, raw, "socket_writes_per_lock"), pair(lib, raw, "commands_per_lock")});
    }
    return t.str();
}

auto peer_table(const results& r) -> std::string {
    table t{{"In flight", "hiredis async locks/s", "p50 / p99 ms", "Client CPU µs/lock",
             "Allocations/lock", "Library ÷ hiredis async (locks/s)"}};
    for (const int c : concurrencies) {
        const json* peer = r.mode(label_of(c), "raw-hiredis");
        const json* lib = r.mode(label_of(c), "lib");
        if (peer == nullptr) continue;
        t.row({std::to_string(c), count(field(peer, "ops_per_s")),
               ms((*peer)["latency_ns"]["p50"]) + " / " + ms((*peer)["latency_ns"]["p99"]),
               sig3(field(peer, "client_cpu_us_per_lock")), sig3(field(peer, "allocs_per_lock")),
               ratio(field(lib, "ops_per_s"), field(peer, "ops_per_s"))});
    }
    return t.empty() ? "(not measured in this run)\n" : t.str();
}

auto variants_table(const results& r) -> std::string {
    table t{{"Cycle", "In flight", "Library locks/s", "Raw locks/s", "Lib ÷ raw",
             "Library p50 / p99 ms", "Raw p50 ms", "p50 ratio", "Commands/lock (with script calls)",
             "CPU µs/lock: client / all servers"}};
    for (const int c : {1, 64}) comparison_row(r, t, "plain", label_of(c), c);
    for (const int c : {1, 64}) comparison_row(r, t, "fencing", "fencing-" + label_of(c), c);
    for (const int c : {1, 64}) comparison_row(r, t, "extend", "extend-" + label_of(c), c);
    return t.str();
}

auto nodes_table(const results& r) -> std::string {
    table t{{"Nodes", "In flight", "Library locks/s", "Raw locks/s", "Lib ÷ raw",
             "Library p50 / p99 ms", "Raw p50 ms", "p50 ratio", "Commands/lock (with script calls)",
             "CPU µs/lock: client / all servers"}};
    for (const int n : {3, 5, 7}) {
        for (const int c : {1, 64}) {
            std::string label = label_of(c);
            if (n != 5) label.insert(0, std::string{"n"} + std::to_string(n) + "-");
            comparison_row(r, t, std::to_string(n), label, c);
        }
    }
    return t.str();
}

auto contended_table(const results& r) -> std::string {
    table t{{"Workers", "Waiting", "Hold ms", "Locks/s", "Lock held (% of time)",
             "Wait to acquire p50 / p99 / max ms", "Gave up (contended)",
             "Busiest / idlest worker share", "Commands per lock"},
            "llrrrrrrr"};
    std::vector<const json*> runs;
    for (const auto& [label, run] : r.runs) {
        // Exclusive locks only: readers and permits have tables of their own.
        if (run["workload"] == "contended" && !run.contains("readers") && !run.contains("permits"))
            runs.push_back(&run);
    }
    std::sort(runs.begin(), runs.end(), [](const json* a, const json* b) {
        return std::pair{(*a)["concurrency"].get<int>(), a->value("max_wait_ms", 0)} <
               std::pair{(*b)["concurrency"].get<int>(), b->value("max_wait_ms", 0)};
    });
    for (const json* each : runs) {
        const json& run = *each;
        const json& lib = run["results"]["lib"];
        const double hold = run["hold_ms"].get<double>();
        const double held = lib["ops_per_s"].get<double>() * hold / 1000 * 100;
        const std::uint64_t gave_up = lib["errors"].contains("acquire:contended")
                                          ? lib["errors"]["acquire:contended"].get<std::uint64_t>()
                                          : 0;
        const int max_wait = run.value("max_wait_ms", 0);
        t.row({std::to_string(run["concurrency"].get<int>()),
               max_wait == 0 ? "retry policy" : "max_wait " + std::to_string(max_wait) + " ms",
               fixed(hold, 0), count(lib["ops_per_s"].get<double>()), fixed(held, 0) + " %",
               ms(lib["acquire_latency_ns"]["p50"]) + " / " + ms(lib["acquire_latency_ns"]["p99"]) +
                   " / " + ms(lib["acquire_latency_ns"]["max"]),
               count(static_cast<double>(gave_up)),
               fixed(lib.value("busiest_worker_share", 0.0) * 100, 0) + " % / " +
                   fixed(lib.value("idlest_worker_share", 0.0) * 100, 0) + " %",
               sig3(lib["commands_per_lock"].get<double>())});
    }
    return t.str();
}

auto client_memory_table(const results& r) -> std::string {
    table t{{"Client", "In flight", "RSS idle (connected) KiB", "RSS peak KiB",
             "(RSS peak − idle) ÷ in flight, bytes", "(heap peak − idle) ÷ in flight, bytes"}};
    for (const auto& [label, mode, c] :
         std::vector<std::tuple<std::string, std::string, int>>{{"mem-lib-c1", "lib", 1},
                                                                {"mem-lib-c1024", "lib", 1024},
                                                                {"mem-raw-c1024", "raw", 1024}}) {
        const json* m = r.mode(label, mode);
        if (m == nullptr) continue;
        t.row({mode == "lib" ? "library" : "raw", std::to_string(c),
               count(field(m, "rss_before_kib")), count(field(m, "rss_peak_kib")),
               count(field(m, "rss_bytes_per_in_flight")),
               m->contains("heap_bytes_per_in_flight") ? count(field(m, "heap_bytes_per_in_flight"))
                                                       : "–"});
    }
    return t.str();
}

auto micro_table(const results& r) -> std::string {
    if (r.micro.is_null()) return "(not measured in this run)\n";
    table t{{"Benchmark", "CPU ns/op (median)", "Allocations/op"}, "lrr"};
    for (const auto& b : r.micro["benchmarks"]) {
        if (b.value("aggregate_name", "") != "median") continue;
        std::string name = b["run_name"].get<std::string>();
        const double allocs = b.contains("allocs") ? b["allocs"].get<double>() : 0.0;
        t.row({code(name), sig3(b["cpu_time"].get<double>()), allocs < 0.01 ? "0" : sig3(allocs)});
    }
    return t.str();
}

auto errors_list(const results& r) -> std::string {
    std::string out;
    for (const auto& [label, run] : r.runs) {
        for (const auto& [mode, res] : run["results"].items()) {
            for (const auto& [kind, n] : res["errors"].items()) {
                if (run["workload"] == "contended" && kind == "acquire:contended") continue;
                out += "- " + code(label) + " " + mode + ": " + kind + " × " +
                       count(n.get<double>()) + " (in a run of " +
                       count(res["completed"].get<double>()) + " locks)\n";
            }
        }
    }
    return out.empty() ? "None: every cycle of every run completed without an error.\n" : out;
}

auto commands_table(const results& r) -> std::string {
    table t{{"Cycle", "Commands the library sent, per lock", "Redis calls, per lock"}, "lrl"};
    for (const auto& [name, label] : std::vector<std::pair<std::string, std::string>>{
             {"plain", "c64"}, {"fencing", "fencing-c64"}, {"extend", "extend-c64"}}) {
        const json* lib = r.mode(label, "lib");
        if (lib == nullptr) continue;
        std::string calls;
        for (const auto& [cmd, n] : (*lib)["redis_commands"].items()) {
            if (!calls.empty()) calls += ", ";
            calls += cmd + " " + sig3(n.get<double>() / field(lib, "completed"));
        }
        t.row({name, sig3(field(lib, "commands_per_lock")), calls});
    }
    return t.str();
}

}  // namespace redlock::bench
