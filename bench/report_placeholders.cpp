// Fills bench/benchmarks.md.in: each {{name}} becomes a table or a figure, or is an error.
#include "report_placeholders.hpp"

#include "report_callgrind.hpp"
#include "report_format.hpp"
#include "report_kinds.hpp"
#include "report_tables.hpp"

#include <algorithm>
#include <utility>

namespace redlock::bench {

auto placeholders::value(const std::string& name) const -> std::optional<std::string> {
    const auto it = scalars().find(name);
    if (it != scalars().end()) return it->second;
    // {{incl_lib:name}}: inclusive instructions per cycle of the first
    // function whose name contains `name`; {{pct_lib:name}}: its share.
    for (const auto& [prefix, tsv] :
         {std::pair{std::string{"incl_lib:"}, &r_.callgrind_lib_inclusive},
          std::pair{std::string{"incl_raw:"}, &r_.callgrind_raw_inclusive},
          std::pair{std::string{"pct_lib:"}, &r_.callgrind_lib_inclusive}}) {
        if (!name.starts_with(prefix)) continue;
        const double v = per_cycle_of(*tsv, name.substr(prefix.size()));
        if (v < 0) return "?";
        if (prefix == "pct_lib:")
            return fixed(100 * v / std::max(instructions_per_cycle(r_, "lib"), 1.0), 0) + " %";
        return count(v);
    }
    if (auto v = kinds_value(r_, name)) return v;
    if (name == "targets") return targets_table(r_);
    if (name == "uncontended") return uncontended_table(r_);
    if (name == "costs") return costs_table(r_);
    if (name == "peer") return peer_table(r_);
    if (name == "variants") return variants_table(r_);
    if (name == "nodes") return nodes_table(r_);
    if (name == "contended") return contended_table(r_);
    if (name == "client_memory") return client_memory_table(r_);
    if (name == "callgrind") return callgrind_table(r_);
    if (name == "callgrind_top") return callgrind_top_tables(r_);
    if (name == "micro") return micro_table(r_);
    if (name == "alloc_sites") return alloc_sites_table(r_);
    if (name == "errors") return errors_list(r_);
    if (name == "commands") return commands_table(r_);
    return std::nullopt;
}

auto placeholders::scalars() const -> const std::map<std::string, std::string>& {
    if (!scalars_.empty()) return scalars_;
    auto& s = scalars_;
    const json& m = r_.meta;
    for (const char* key : {"date", "machine", "cpu", "cores", "memory", "kernel", "compiler",
                            "redis_version", "commit", "duration"}) {
        s[key] = m.contains(key) ? m[key].get<std::string>() : "?";
    }
    double lo = 1e9;
    double hi = 0;
    for (const auto& [label, run] : r_.runs) {
        // The lock-kind runs give their own (bench/run.sh --kinds runs them apart).
        if (label == readers_run || label == rwlock_run || label == semaphore_run) continue;
        for (const char* k : {"load_average_before", "load_average_after"}) {
            lo = std::min(lo, run[k].get<double>());
            hi = std::max(hi, run[k].get<double>());
        }
    }
    s["load_range"] = fixed(lo, 1) + "–" + fixed(hi, 1);
    const auto from = [&](const std::string& label, const char* mode, const char* which,
                          const char* pct) {
        return sig3(percentile(r_.mode(label, mode), which, pct) / 1e6);
    };
    for (const int c : concurrencies) {
        const std::string l = label_of(c);
        for (const char* p : {"p50", "p99", "p999", "max"}) {
            s[l + "_lib_acquire_" + p + "_ms"] = from(l, "lib", "acquire_latency_ns", p);
            s[l + "_lib_cycle_" + p + "_ms"] = from(l, "lib", "latency_ns", p);
            s[l + "_raw_cycle_" + p + "_ms"] = from(l, "raw", "latency_ns", p);
        }
        for (const char* mode : {"lib", "raw"}) {
            const json* run = r_.mode(l, mode);
            const std::string p = l + "_" + mode + "_";
            s[p + "ops"] = count(field(run, "ops_per_s"));
            s[p + "allocs"] = sig3(field(run, "allocs_per_lock"));
            s[p + "cpu"] = sig3(field(run, "client_cpu_us_per_lock"));
            s[p + "server_cpu"] = sig3(field(run, "server_cpu_us_per_lock"));
        }
    }
    const json* c1 = r_.run("c1");
    s["request_timeout_ms"] =
        c1 != nullptr ? std::to_string((*c1)["request_timeout_ms"].get<int>()) : "?";
    s["lib_ir"] = count(instructions_per_cycle(r_, "lib"));
    s["raw_ir"] = count(instructions_per_cycle(r_, "raw"));
    s["ir_ratio"] = ratio(instructions_per_cycle(r_, "lib"), instructions_per_cycle(r_, "raw"));
    s["raw_resp_ir"] = count(instructions_per_cycle(r_, "raw_resp"));
    s["ir_ratio_same_encoder"] =
        ratio(instructions_per_cycle(r_, "lib"), instructions_per_cycle(r_, "raw_resp"));
    const auto micro_ns = [&](const std::string& name) -> std::string {
        if (r_.micro.is_null()) return "?";
        for (const auto& b : r_.micro["benchmarks"]) {
            if (b.value("aggregate_name", "") == "median" && b["run_name"] == name)
                return sig3(b["cpu_time"].get<double>());
        }
        return "?";
    };
    s["encode_set_ns"] = micro_ns("encode_set");
    s["encode_hiredis_ns"] = micro_ns("encode_set_hiredis_reference");
    s["lock_value_ns"] = micro_ns("lock_value_generation");
    s["config_ns"] = micro_ns("config_loading");
    const json* mem = r_.mode("mem-lib-c1024", "lib");
    s["mem_per_lock"] = count(field(mem, "rss_bytes_per_in_flight"));
    s["heap_per_lock"] = count(field(mem, "heap_bytes_per_in_flight"));
    const json* raw_mem = r_.mode("mem-raw-c1024", "raw");
    s["raw_heap_per_lock"] = count(field(raw_mem, "heap_bytes_per_in_flight"));
    const auto [best, at] = best_lib_throughput(r_);
    s["c1024_share_of_best"] =
        fixed(100 * field(r_.mode("c1024", "lib"), "ops_per_s") / std::max(best, 1.0), 0) + " %";
    return scalars_;
}

auto fill(const std::string& text, const placeholders& values, std::string& problem)
    -> std::string {
    std::string out;
    std::size_t at = 0;
    while (true) {
        const std::size_t open = text.find("{{", at);
        if (open == std::string::npos) break;
        const std::size_t close = text.find("}}", open);
        if (close == std::string::npos) break;
        out.append(text, at, open - at);
        const std::string name = text.substr(open + 2, close - open - 2);
        if (auto v = values.value(name)) {
            // A block that ends a paragraph keeps exactly one newline.
            if (!v->empty() && v->back() == '\n' && text.compare(close + 2, 1, "\n") == 0)
                v->pop_back();
            out += *v;
        } else {
            problem += "unknown placeholder {{" + name + "}}\n";
        }
        at = close + 2;
    }
    out.append(text, at);
    return out;
}

}  // namespace redlock::bench
