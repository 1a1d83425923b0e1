// Builds the lock-kind tables and figures of the report from the runs
// readers-c64 (uncontended: exclusive, readers, readers on one resource),
// rw-r16-w2 (readers and writers on one resource) and sem-k4-w16 (a semaphore).
#include "report_kinds.hpp"

#include "report_format.hpp"
#include "report_markdown_table.hpp"
#include "report_tables.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace redlock::bench {

namespace {

/// The three modes of the readers run, as the table names them.
struct reader_mode {
    const char* mode;
    const char* lock;
    const char* resources;
};
constexpr reader_mode reader_modes[] = {
    {"lib", "exclusive", "64 distinct"},
    {"lib-shared", "reader (`shared = true`)", "64 distinct"},
    {"lib-shared-one", "reader (`shared = true`)", "1, shared by all 64"},
};

auto ops(const results& r, const char* mode) -> double {
    return field(r.mode(readers_run, mode), "ops_per_s");
}

/// results.lib.kinds of a contended kinds run, or nullptr.
auto kinds_of(const results& r, const char* label) -> const json* {
    const json* lib = r.mode(label, "lib");
    return lib != nullptr && lib->contains("kinds") ? &(*lib)["kinds"] : nullptr;
}

auto role_of(const json* kinds, const char* role) -> const json* {
    if (kinds == nullptr || !(*kinds)["roles"].contains(role)) return nullptr;
    return &(*kinds)["roles"][role];
}

auto waits(const json& role) -> std::string {
    const json& w = role["wait_ns"];
    return ms(w["p50"]) + " / " + ms(w["p99"]) + " / " + ms(w["max"]);
}

auto readers_table(const results& r) -> std::string {
    table t{{"Lock", "Resources", "Locks/s (median)", "÷ exclusive", "Per repetition (÷ exclusive)",
             "p50 / p99 ms", "Client commands / lock", "Redis calls / lock (with scripts')",
             "CPU µs/lock: client / all servers"},
            "llrrrrrrr"};
    const double exclusive = ops(r, "lib");
    const json* lib = r.mode(readers_run, "lib");
    for (const auto& m : reader_modes) {
        const json* run = r.mode(readers_run, m.mode);
        if (run == nullptr || lib == nullptr) continue;
        std::string reps;
        const json& mine = (*run)["ops_per_s_reps"];
        const json& theirs = (*lib)["ops_per_s_reps"];
        for (std::size_t i = 0; i < mine.size(); ++i) {
            if (!reps.empty()) reps += ", ";
            reps += count(mine[i].get<double>());
            if (m.mode != std::string{"lib"} && i < theirs.size())
                reps += " (" + ratio(mine[i].get<double>(), theirs[i].get<double>()) + ")";
        }
        t.row({m.lock, m.resources, count(field(run, "ops_per_s")),
               ratio(field(run, "ops_per_s"), exclusive), reps,
               ms((*run)["latency_ns"]["p50"]) + " / " + ms((*run)["latency_ns"]["p99"]),
               sig3(field(run, "client_requests_per_lock")),
               sig3(field(run, "redis_calls_per_lock")),
               sig3(field(run, "client_cpu_us_per_lock")) + " / " +
                   sig3(field(run, "server_cpu_us_per_lock"))});
    }
    return t.empty() ? "(not measured in this run)\n" : t.str();
}

auto rwlock_table(const results& r) -> std::string {
    const json* kinds = kinds_of(r, rwlock_run);
    if (kinds == nullptr) return "(not measured in this run)\n";
    const json& lib = *r.mode(rwlock_run, "lib");
    table t{{"Role", "Workers", "Grants/s", "Wait from asking to holding p50 / p99 / max ms",
             "Gave up"},
            "lrrrr"};
    for (const char* role : {"writer", "reader"}) {
        const json* s = role_of(kinds, role);
        if (s == nullptr) continue;
        t.row({std::string{role} + "s", std::to_string((*s)["workers"].get<int>()),
               count((*s)["grants_per_s"].get<double>()), waits(*s),
               count((*s)["gave_up"].get<double>())});
    }
    t.row({"all", std::to_string((*r.run(rwlock_run))["concurrency"].get<int>()),
           count(field(&lib, "ops_per_s")), waits(json{{"wait_ns", lib["acquire_latency_ns"]}}),
           count(field(&lib, "failed"))});
    return t.str();
}

auto semaphore_table(const results& r) -> std::string {
    const json* kinds = kinds_of(r, semaphore_run);
    const json* run = r.run(semaphore_run);
    if (kinds == nullptr || run == nullptr) return "(not measured in this run)\n";
    const json& lib = *r.mode(semaphore_run, "lib");
    const json* permit = role_of(kinds, "permit");
    const double k = (*kinds)["permits"].get<double>();
    const double hold = (*run)["hold_ms"].get<double>();
    table t{{"Figure", "Value"}, "lr"};
    t.row({"Grants/s", count(field(&lib, "ops_per_s"))});
    t.row({"At most (K ÷ hold time)", count(k * 1000 / std::max(hold, 1e-9))});
    t.row({"Client commands / grant (`client_stats::requests`)",
           sig3(field(&lib, "client_requests_per_lock"))});
    t.row({"Redis calls / grant (with the scripts')", sig3(field(&lib, "redis_calls_per_lock"))});
    t.row({"Permit utilisation: permits held ÷ K, granted → release sent",
           fixed(100 * (*kinds)["permit_utilisation_working"].get<double>(), 1) + " %"});
    t.row({"… granted → release answered",
           fixed(100 * (*kinds)["permit_utilisation"].get<double>(), 1) + " %"});
    if (permit != nullptr) t.row({"Wait p50 / p99 / max ms", waits(*permit)});
    t.row({"Gave up", count(field(&lib, "failed"))});
    t.row({"Most permits held at once (seen by the workers)",
           std::to_string((*kinds)["most_permits_held"].get<int>())});
    t.row({"Busiest / idlest worker share",
           fixed(field(&lib, "busiest_worker_share") * 100, 1) + " % / " +
               fixed(field(&lib, "idlest_worker_share") * 100, 1) + " %"});
    t.row({"CPU µs/grant: client / all servers", sig3(field(&lib, "client_cpu_us_per_lock")) +
                                                     " / " +
                                                     sig3(field(&lib, "server_cpu_us_per_lock"))});
    return t.str();
}

/// The single figures for the prose.
auto scalars(const results& r) -> std::map<std::string, std::string> {
    std::map<std::string, std::string> s;
    const json* any = r.run(readers_run);
    if (any == nullptr) any = r.run(rwlock_run);
    s["kinds_date"] = any != nullptr ? any->value("finished_utc", std::string{"?"}) : "?";
    s["kinds_load"] = any != nullptr ? fixed((*any)["load_average_before"].get<double>(), 1) + "–" +
                                           fixed((*any)["load_average_after"].get<double>(), 1)
                                     : "?";
    s["shared_vs_exclusive"] = ratio(ops(r, "lib-shared"), ops(r, "lib"));
    s["shared_one_vs_exclusive"] = ratio(ops(r, "lib-shared-one"), ops(r, "lib"));
    s["readers_cmd"] = command_of(r, readers_run);
    s["rwlock_cmd"] = command_of(r, rwlock_run);
    s["semaphore_cmd"] = command_of(r, semaphore_run);
    for (const auto& m : reader_modes) {
        const json* run = r.mode(readers_run, m.mode);
        const std::string key = std::string{m.mode}.substr(3);  // "", "-shared", "-shared-one"
        const std::string p = key.empty() ? "excl" : key == "-shared" ? "shared" : "shared_one";
        s[p + "_calls"] = sig3(field(run, "redis_calls_per_lock"));
        s[p + "_server_cpu"] = sig3(field(run, "server_cpu_us_per_lock"));
        s[p + "_client_cpu"] = sig3(field(run, "client_cpu_us_per_lock"));
        s[p + "_allocs"] = sig3(field(run, "allocs_per_lock"));
        s[p + "_locks"] = count(field(run, "completed"));
        const auto times = [&](const char* what, const char* name) {
            return run != nullptr && (*run)[what].contains(name) ? (*run)[what][name].get<double>()
                                                                 : 0.0;
        };
        s[p + "_release_timeouts"] = count(times("errors", "release_node:timeout"));
        s[p + "_late_deleted"] = run != nullptr && run->contains("release_late")
                                     ? count((*run)["release_late"]["deleted"].get<double>())
                                     : "?";
        s[p + "_release_minority"] =
            count(times("errors", "release:deleted_on_fewer_than_a_majority"));
    }
    const json* sem = r.mode(semaphore_run, "lib");
    s["semaphore_calls"] = sig3(field(sem, "redis_calls_per_lock"));
    s["semaphore_client_cpu"] = sig3(field(sem, "client_cpu_us_per_lock"));
    s["rw_client_cpu"] = sig3(field(r.mode(rwlock_run, "lib"), "client_cpu_us_per_lock"));
    const json* sem_kinds = kinds_of(r, semaphore_run);
    const json* sem_run = r.run(semaphore_run);
    s["semaphore_share_of_limit"] =
        sem_kinds != nullptr && sem_run != nullptr
            ? fixed(100 * field(sem, "ops_per_s") * (*sem_run)["hold_ms"].get<double>() / 1000 /
                        (*sem_kinds)["permits"].get<double>(),
                    0) +
                  " %"
            : "?";
    s["semaphore_requests"] = sig3(field(sem, "client_requests_per_lock"));
    std::uint64_t violations = 0;
    for (const char* label : {rwlock_run, semaphore_run}) {
        if (const json* k = kinds_of(r, label); k != nullptr)
            violations += (*k)["exclusion_violations"].get<std::uint64_t>();
    }
    s["kinds_violations"] = count(static_cast<double>(violations));
    const json* rw = kinds_of(r, rwlock_run);
    s["most_readers_together"] =
        rw != nullptr ? std::to_string((*rw)["most_readers_together"].get<int>()) : "?";
    const auto pct = [](double share) { return fixed(100 * share, 0) + " %"; };
    const double writers = field(rw, "writers_holding_share");
    const double readers = field(rw, "readers_holding_share");
    s["rw_batches_per_s"] = count(field(rw, "reader_batches_per_s"));
    s["rw_batch_ms"] = sig3(field(rw, "reader_batch_ms_mean"));
    s["rw_writers_share"] = pct(writers);
    s["rw_readers_share"] = pct(readers);
    s["rw_neither_share"] = pct(std::max(0.0, 1 - writers - readers));
    // Hand-offs: one before each writer's grant and each batch of readers.
    const json* w = role_of(rw, "writer");
    const double handoffs_per_s =
        field(rw, "reader_batches_per_s") + (w != nullptr ? field(w, "grants_per_s") : 0.0);
    s["rw_handoff_ms"] = handoffs_per_s > 0
                             ? sig3(std::max(0.0, 1 - writers - readers) * 1000 / handoffs_per_s)
                             : "?";
    const json* rw_run = r.run(rwlock_run);
    s["rw_hold_ms"] = rw_run != nullptr ? fixed((*rw_run)["hold_ms"].get<double>(), 0) : "?";
    return s;
}

}  // namespace

auto kinds_value(const results& r, const std::string& name) -> std::optional<std::string> {
    if (name == "readers") return readers_table(r);
    if (name == "rwlock") return rwlock_table(r);
    if (name == "semaphore") return semaphore_table(r);
    const auto s = scalars(r);
    const auto it = s.find(name);
    if (it == s.end()) return std::nullopt;
    return it->second;
}

}  // namespace redlock::bench
