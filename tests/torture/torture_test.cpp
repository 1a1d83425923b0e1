// The torture test: several worker processes contend for a few resources through the
// public API while a seeded fault injector kills, restarts, freezes, slows, cuts and
// blackholes the nodes (every node is reached through its own fault proxy). The resources
// are used as a plain lock, a read-write lock (readers and writers) and a semaphore of 2
// permits, so that every lock kind meets the same faults. Each worker runs a few threads on
// its one client, and the plain lock's acquisitions ask for no fencing token (the
// read-write lock's always do): a release by one thread then hands the lock straight to
// another thread's waiter (the hand-off), and at least one hand-off must happen in the run.
// Afterwards the workers' records are checked (checker.hpp): no writer, fenced or not, overlaps
// another holder of its resource while both believed their lock valid, no more than 2 permits are
// held at once, fencing tokens of fenced writers strictly increase in acquisition order (a reader's
// keeps up with them), and no hold is left on any node once every worker has released what
// it held (key_shapes.hpp).
//
// Environment:
//   REDLOCK_TORTURE_SECONDS  length of the fault phase (default 120)
//   REDLOCK_TORTURE_SEED     seed of the fault schedule and the workers (default: random,
//                            printed for replay)
//   REDLOCK_TORTURE_WORKERS  worker processes (default 4)
//   REDLOCK_TORTURE_THREADS  threads per worker, sharing its client (default 2); with 2 or
//                            more, the run fails without a hand-off (with 1 none can happen)
//   REDLOCK_TORTURE_KEEP     1: keep the run directory (records, logs, AOF) even on success
//   REDLOCK_TORTURE_DELAYED_RESTART  0: restart in-memory nodes without waiting for the
//                            longest TTL (only the clients' restart quarantine protects)
//   REDLOCK_TORTURE_PERSISTENT_NODES  how many of the 5 nodes persist every write (AOF,
//                            appendfsync always; default 3); the others are in memory
//   REDLOCK_TORTURE_QUARANTINE_MS  the clients' restart_quarantine_ms (default 1000, the
//                            longest TTL; 0 turns the client-side delayed-restart rule off)
//   REDLOCK_TORTURE_MAX_IMPAIRED  nodes impaired at once at most (default 2, a minority of
//                            5); 3 or more gives up liveness on purpose: safety must hold

#include "checker.hpp"
#include "injector.hpp"
#include "leftovers.hpp"
#include "process.hpp"
#include "record.hpp"
#include "support/fault_proxy.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using redlock_torture::monotonic_ns;
namespace fs = std::filesystem;

constexpr std::size_t node_count = 5;
constexpr auto max_ttl = 1000ms;
constexpr auto waiter_ttl = 2000ms;
// The workers' operations are split between the kinds by resource (worker.cpp, --kinds):
// the same workers, the same time, each kind about a third of it.
const std::vector<std::string> resources{"torture:a", "torture:b", "torture:c"};
constexpr int semaphore_permits = 2;
const std::string uses = "x,rw," + std::to_string(semaphore_permits);

auto env_number(const char* name, std::uint64_t fallback) -> std::uint64_t {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    return std::strtoull(text, nullptr, 10);
}

auto say(const std::string& text) -> void {
    std::fputs(text.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

auto worker_argv(int id, std::uint64_t seed, int threads, const fs::path& dir,
                 const fs::path& config) -> std::vector<std::string> {
    return {REDLOCK_TORTURE_WORKER,
            "--config",
            config.string(),
            "--id",
            std::to_string(id),
            "--out",
            (dir / ("worker-" + std::to_string(id) + ".records")).string(),
            "--seed",
            std::to_string(seed),
            "--resources",
            resources[0] + "," + resources[1] + "," + resources[2],
            "--kinds",
            uses,
            "--threads",
            std::to_string(threads)};
}

auto node_config_json(const std::vector<redlock_test::fault_proxy>& proxies,
                      std::uint64_t quarantine_ms) -> std::string {
    std::string nodes;
    for (const auto& p : proxies) {
        if (!nodes.empty()) nodes += ", ";
        nodes += R"({"host": "127.0.0.1", "port": )" + std::to_string(p.port()) + "}";
    }
    return R"({
  "nodes": [)" +
           nodes +
           R"(],
  "connect_timeout_ms": 200,
  "request_timeout_ms": 50,
  "restart_quarantine_ms": )" +
           std::to_string(quarantine_ms) + R"(,
  "lock": {"ttl_ms": )" +
           std::to_string(max_ttl.count()) + R"(, "fencing": true, "waiter_ttl_ms": )" +
           std::to_string(waiter_ttl.count()) + R"(},
  "retry": {"attempts": 3, "delay_ms": 30, "jitter_ms": 40},
  "reconnect": {"min_delay_ms": 20, "max_delay_ms": 200}
}
)";
}

}  // namespace

TEST_CASE("torture: contending workers under injected faults") {
    const std::uint64_t seconds = env_number("REDLOCK_TORTURE_SECONDS", 120);
    const std::uint64_t seed = env_number("REDLOCK_TORTURE_SEED", std::random_device{}());
    const int workers =
        static_cast<int>(std::max<std::uint64_t>(env_number("REDLOCK_TORTURE_WORKERS", 4), 1));
    const int threads = static_cast<int>(
        std::clamp<std::uint64_t>(env_number("REDLOCK_TORTURE_THREADS", 2), 1, 64));
    const bool keep = env_number("REDLOCK_TORTURE_KEEP", 0) == 1;
    // Nodes 0..persistent_nodes-1 persist every write (AOF, appendfsync always).
    const auto persistent_nodes =
        std::min<std::size_t>(env_number("REDLOCK_TORTURE_PERSISTENT_NODES", 3), node_count);
    const std::uint64_t quarantine_ms =
        env_number("REDLOCK_TORTURE_QUARANTINE_MS", static_cast<std::uint64_t>(max_ttl.count()));
    const bool delayed_restart = env_number("REDLOCK_TORTURE_DELAYED_RESTART", 1) != 0;
    const auto max_impaired =
        static_cast<std::size_t>(env_number("REDLOCK_TORTURE_MAX_IMPAIRED", (node_count - 1) / 2));
    const auto started = std::chrono::steady_clock::now();
    const std::int64_t origin = monotonic_ns();

    const fs::path dir =
        fs::temp_directory_path() / "redlock-tests" / ("torture-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    say("torture: seed " + std::to_string(seed) +
        " (replay with REDLOCK_TORTURE_SEED=" + std::to_string(seed) + "), " +
        std::to_string(seconds) + " s of faults, " + std::to_string(workers) + " workers of " +
        std::to_string(threads) + " threads, " + std::to_string(resources.size()) + " resources (" +
        uses + ": a plain lock, readers and writers, a semaphore), " + std::to_string(node_count) +
        " nodes (" + std::to_string(persistent_nodes) +
        " with appendfsync always, the others in memory " +
        std::string{delayed_restart ? "with the delayed-restart rule" : "restarted without delay"} +
        "; clients' restart quarantine " + std::to_string(quarantine_ms) + " ms), at most " +
        std::to_string(max_impaired) + " impaired at once; run directory " + dir.string());

    // ---- the cluster: every node behind its own proxy --------------------------------------
    std::vector<redlock_test::redis_server> nodes;
    std::vector<redlock_test::fault_proxy> proxies;
    std::vector<bool> persistent;
    for (std::size_t i = 0; i < node_count; ++i) {
        redlock_test::server_options options;
        if (i < persistent_nodes) {
            const fs::path data = dir / ("node-" + std::to_string(i));
            fs::create_directories(data);
            options.extra_args = {"--appendonly", "yes",   "--appendfsync",
                                  "always",       "--dir", data.string()};
        }
        nodes.emplace_back(options);
        proxies.emplace_back(nodes.back().port());
        persistent.push_back(i < persistent_nodes);
    }
    const fs::path config = dir / "cluster.json";
    std::ofstream{config} << node_config_json(proxies, quarantine_ms);

    // ---- workers -----------------------------------------------------------------------------
    std::vector<redlock_torture::child_process> pool;
    for (int i = 0; i < workers; ++i) {
        pool.emplace_back(
            worker_argv(i, seed * 1000 + static_cast<std::uint64_t>(i), threads, dir, config),
            dir / ("worker-" + std::to_string(i) + ".log"));
    }
    std::vector<std::string> problems;
    bool died_early = false;
    auto record_file = [&](int i) { return dir / ("worker-" + std::to_string(i) + ".records"); };

    // ---- faults --------------------------------------------------------------------------
    std::FILE* fault_log = std::fopen((dir / "faults.log").c_str(), "w");
    REQUIRE(fault_log != nullptr);
    std::fprintf(fault_log, "%lld start seed=%llu\n", static_cast<long long>(origin),
                 static_cast<unsigned long long>(seed));
    redlock_torture::injector_settings settings;
    settings.persistent = persistent;
    settings.max_ttl = max_ttl;
    settings.max_impaired = max_impaired;
    settings.delay_in_memory_restarts = delayed_restart;
    redlock_torture::fault_injector injector{nodes, proxies, settings, seed, fault_log};
    const auto fault_end = std::chrono::steady_clock::now() + std::chrono::seconds{seconds};
    auto next_progress = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < fault_end) {
        injector.step();
        for (auto& w : pool) {
            if (w.exited()) {
                problems.push_back("worker pid " + std::to_string(w.pid()) + " " + w.describe() +
                                   " during the run; see " + w.log().string());
                died_early = true;
            }
        }
        if (!problems.empty()) break;
        if (std::chrono::steady_clock::now() >= next_progress) {
            next_progress += 30s;
            std::string line = "torture: " +
                               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                  std::chrono::steady_clock::now() - started)
                                                  .count()) +
                               " s, faults so far:";
            for (const auto& [kind, n] : injector.counts())
                line += " " + kind + "=" + std::to_string(n);
            say(line);
        }
        std::this_thread::sleep_for(2ms);
    }
    injector.heal_all();
    std::fprintf(fault_log, "%lld healed\n", static_cast<long long>(monotonic_ns()));
    std::fflush(fault_log);
    // Every key written during the faults has expired by now (TTLs are at most max_ttl,
    // and a renewed lock is released by its holder): what is left at the end was left by
    // the releases of a healthy cluster.
    std::this_thread::sleep_for(max_ttl + 1500ms);

    // ---- stop the workers: they finish their critical section and release -----------------
    for (auto& w : pool) w.close_stdin();
    bool all_stopped = true;
    for (auto& w : pool) {
        if (!w.wait_for(20s)) {
            all_stopped = false;
            w.kill();
            problems.push_back("worker pid " + std::to_string(w.pid()) +
                               " did not stop within 20 s of its stdin closing");
        } else if (!w.exited_cleanly() && !died_early) {
            problems.push_back("worker pid " + std::to_string(w.pid()) + " " + w.describe() +
                               "; see " + w.log().string());
        }
    }
    std::fprintf(fault_log, "%lld workers stopped (all=%d)\n",
                 static_cast<long long>(monotonic_ns()), all_stopped ? 1 : 0);
    std::fclose(fault_log);

    // ---- leftovers, right after the releases ----------------------------------------------
    // Every hold must be gone; a semaphore's count and the wait queues may stay, as long as
    // their TTL ends in time (key_shapes.hpp): nobody refreshes them any more.
    const redlock_torture::leftover_limits limits{max_ttl.count(), waiter_ttl.count()};
    std::size_t keys_left = 0;
    std::size_t keys_expiring = 0;
    std::size_t fence_counters = 0;
    std::string leftovers;
    for (const auto& key : redlock_torture::scan_keys(nodes, {})) {
        if (const auto leak = redlock_torture::leak_reason(key.shape, key.pttl_ms, limits)) {
            ++keys_left;
            leftovers += "\n  " + key.describe() + ": " + *leak;
        } else {
            ++keys_expiring;
        }
    }
    for (const auto& node : nodes)
        fence_counters += redlock_torture::keys_matching(node, "redlock-fence:*").size();

    // ---- the records -------------------------------------------------------------------------
    std::vector<redlock_torture::hold_record> holds;
    std::map<std::string, std::uint64_t> totals;
    std::size_t unreadable = 0;
    for (int i = 0; i < workers; ++i) {
        auto file = redlock_torture::read_worker_file(record_file(i));
        unreadable += file.unreadable_lines;
        holds.insert(holds.end(), file.holds.begin(), file.holds.end());
        if (!file.summary) {
            problems.push_back("worker " + std::to_string(i) + " wrote no summary to " +
                               record_file(i).string());
            continue;
        }
        for (const auto& [key, n] : file.summary->counts) totals[key] += n;
    }
    const auto report = redlock_torture::check_holds(holds);
    const auto took = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - started);

    // ---- figures -------------------------------------------------------------------------
    auto total = [&](const char* key) { return std::to_string(totals[key]); };
    auto holds_of = [&](const std::string& r) -> std::size_t {
        const auto it = report.holds_per_resource.find(r);
        return it == report.holds_per_resource.end() ? 0 : it->second;
    };
    std::string per_resource;
    std::string most_at_once;
    for (const auto& r : resources) {
        if (!per_resource.empty()) per_resource += ", ";
        per_resource += r + " " + std::to_string(holds_of(r));
        const auto most = report.most_at_once.find(r);
        most_at_once += (most_at_once.empty() ? "" : ", ") + r + " " +
                        std::to_string(most == report.most_at_once.end() ? 0 : most->second);
    }
    auto of_kind = [&](const char* kind) -> std::size_t {
        const auto it = report.holds_per_kind.find(kind);
        return it == report.holds_per_kind.end() ? 0 : it->second;
    };
    std::string faults;
    for (const auto& [kind, n] : injector.counts()) {
        if (kind == "skipped") continue;
        faults += (faults.empty() ? "" : ", ") + kind + " " + std::to_string(n);
    }
    say("torture figures (seed " + std::to_string(seed) + "):");
    say("  acquisitions attempted " + total("attempts") + ", granted " + total("granted") + " (" +
        per_resource + "); failed: contended " + total("contended") + ", quorum_unreachable " +
        total("quorum_unreachable") + ", validity_expired " + total("validity_expired") +
        ", cancelled " + total("cancelled") + ", other " +
        std::to_string(totals["other_error"] + totals["client_stopped"]));
    say("  holds: granted but already invalid " + total("never_valid") + ", invalid at the end " +
        total("invalid_at_end") + " (of which lost by auto-renewal " + total("lost") +
        "), renewals " + total("renewals") + ", manual extends " + total("extends") + " (failed " +
        total("extend_failures") + "), releases deleting on a majority " +
        total("released_on_majority") + ", release errors " + total("release_failures"));
    say("  faults injected: " + faults + " (skipped by the impairment limit " +
        std::to_string(injector.counts().at("skipped")) + ", at most " +
        std::to_string(injector.max_impaired()) + " nodes impaired at once)");
    say("  clients: attempts " + total("client_attempts") + ", requests " + total("requests") +
        ", request timeouts " + total("timeouts") + ", connects " + total("connects") +
        ", node restarts seen " + total("node_restarts_seen"));
    say("  kinds: valid holds by kind: writer " + std::to_string(of_kind("writer")) + ", reader " +
        std::to_string(of_kind("reader")) + ", permit " + std::to_string(of_kind("permit")) +
        "; most holders at once: " + most_at_once + "; kind mismatches " + total("kind_mismatch") +
        ", fencing mismatches " + total("fencing_mismatch"));
    say("  hand-offs: " + total("handoffs") + " (releases passing the lock to a waiter of the " +
        "same client); writers granted without a token " + total("granted_unfenced") + " (valid " +
        std::to_string(report.unfenced_writers) + ", checked for overlaps)");
    say("  checks: holds checked " + std::to_string(report.holds) + ", overlaps " +
        std::to_string(report.overlaps.size()) + ", token inversions " +
        std::to_string(report.inversions.size()) + ", more than " +
        std::to_string(semaphore_permits) + " permits at once " +
        std::to_string(report.excesses.size()) + ", keys left " + std::to_string(keys_left) +
        " (bookkeeping keys expiring in time: " + std::to_string(keys_expiring) +
        "; fence counters kept: " + std::to_string(fence_counters) + "), unreadable record lines " +
        std::to_string(unreadable));
    say("  runtime " + std::to_string(took.count()) + " s");

    const std::string details = redlock_torture::describe_problems(report, origin, 10);
    if (!details.empty() || keys_left > 0) {
        say(details + (keys_left > 0 ? "\nKEYS LEFT:" + leftovers : "") +
            "\n(times in ms since the start; faults in " + (dir / "faults.log").string() +
            ", stamped in ns on the same clock; origin " + std::to_string(origin) + " ns)");
    }

    for (const auto& p : problems) FAIL_CHECK(p);
    CHECK(unreadable == 0);
    CHECK(report.overlaps.empty());
    CHECK(report.inversions.empty());
    CHECK(report.excesses.empty());
    CHECK(keys_left == 0);
    CHECK(totals["kind_mismatch"] == 0);
    CHECK(totals["fencing_mismatch"] == 0);
    // The point of the unfenced writers and the threads: the checks above saw hand-offs
    // (one thread per worker cannot have any: its only waiter is never beside its hold).
    const bool handoffs_seen = threads < 2 || totals["handoffs"] > 0;
    CHECK(handoffs_seen);
    for (const auto& r : resources) CHECK(holds_of(r) > 0);
    for (const char* kind : {"writer", "reader", "permit"}) CHECK(of_kind(kind) > 0);
    const bool passed = problems.empty() && unreadable == 0 && report.ok() && keys_left == 0 &&
                        totals["kind_mismatch"] == 0 && totals["fencing_mismatch"] == 0 &&
                        handoffs_seen;
    if (passed && !keep) {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    } else {
        say("torture: run directory kept: " + dir.string());
    }
}
