// The torture test: several worker processes contend for a few resources through the
// public API while a seeded fault injector kills, restarts, freezes, slows, cuts and
// blackholes the nodes (every node is reached through its own fault proxy). The resources
// are used as a plain lock, a read-write lock (readers and writers), a semaphore of 2
// permits, a reentrant lock (re-entered by its owner in each critical section) and locks in
// sessions (each worker's client shares one among its threads, opened again once lost or
// closed), so that every lock kind meets the same faults. Each worker runs a few threads on
// its one client, and the plain lock's acquisitions ask for no fencing token (the
// read-write lock's always do): a release by one thread then hands the lock straight to
// another thread's waiter (the hand-off), and at least one hand-off must happen in the run.
// A permit rush worker beside them (rush_workload below) has several clients whose threads
// only take a permit of a fourth resource, a semaphore of 2, hold it for a few ms and wait
// for it in every waiting mode: its attempts race and are lost often, the late answers of a
// lost attempt come within its loss grace, and issue 36 (a waiting attempt granted a permit
// no majority granted, from yeses for different permits counted together) failed every run:
// 52 to 98 overlaps in each of three runs against the unfixed library (the mixed workers
// alone had found it by luck).
// Afterwards the workers' records are checked (checker.hpp): no writer, fenced or not, overlaps
// another holder of its resource while both believed their lock valid, no more than 2 permits are
// held at once, fencing tokens of fenced writers strictly increase in acquisition order (a reader's
// keeps up with them), no record names an impossible value (a permit past K or below 0, a fenced
// writer's token 0: a safety finding, never an unreadable line), and no hold is left on any
// node once every worker has released what it held (key_shapes.hpp). A failed run prints its
// seed, the command that replays it, its run directory (kept) and the end of its fault log.
//
// Beside them, candidate processes campaign for one election (election_load.hpp), each through
// proxies of its own, under reconnect storms, partitions and pauses aimed at one of them, and
// the leader is SIGKILLed now and then (a fresh candidate takes its place); their records are
// checked too (election_checker.hpp): leaderships never overlap, terms strictly increase (or
// repeat only as the faults log allows: token_erasure.hpp), a killed leader's successor starts
// after its validity, and a replayed fenced store takes every leader's writes and refuses stale
// terms. An observer process follows the election with client::observe through proxies of its
// own, under storms and partitions of its own (observer_load.hpp); its reports never go back in
// term, name no leader that was not, and end with the final leader, then with none
// (observer_checker.hpp).
//
// Environment:
//   REDLOCK_TORTURE_SECONDS  length of the fault phase (default 120)
//   REDLOCK_TORTURE_SEED     seed of the fault schedule and the workers (default: random,
//                            printed for replay)
//   REDLOCK_TORTURE_WORKERS  worker processes (default 4)
//   REDLOCK_TORTURE_THREADS  threads per worker, sharing its client (default 2); with 2 or
//                            more, the run fails without a hand-off (with 1 none can happen)
//   REDLOCK_TORTURE_RUSH_WORKERS  permit rush processes (default 1; 0: none)
//   REDLOCK_TORTURE_RUSH_THREADS  threads of each (default 6), over
//   REDLOCK_TORTURE_RUSH_CLIENTS  clients of each (default 3)
//   REDLOCK_TORTURE_RUSH_HOLD_MS  a rush permit is held 0 to this many ms (default 60)
//   REDLOCK_TORTURE_KEEP     1: keep the run directory (records, logs, AOF) even on success
//   REDLOCK_TORTURE_DELAYED_RESTART  0: restart in-memory nodes without waiting for the
//                            longest TTL (only the clients' restart quarantine protects)
//   REDLOCK_TORTURE_PERSISTENT_NODES  how many of the 5 nodes persist every write (AOF,
//                            appendfsync always; default 3); the others are in memory
//   REDLOCK_TORTURE_QUARANTINE_MS  the clients' restart_quarantine_ms (default 1000, the
//                            longest TTL; 0 turns the client-side delayed-restart rule off)
//   REDLOCK_TORTURE_MAX_IMPAIRED  nodes impaired at once at most (default 2, a minority of
//                            5); 3 or more gives up liveness on purpose: safety must hold
//   REDLOCK_TORTURE_CANDIDATES  candidate processes of the election (default 3; 0: none)
//   REDLOCK_TORTURE_LEADER_KILLS  0: never SIGKILL the leading candidate (default 1)
//   REDLOCK_TORTURE_OBSERVERS  observer processes of the election (default 1; 0: none)

#include "checker.hpp"
#include "election_load.hpp"
#include "injector.hpp"
#include "leftovers.hpp"
#include "observer_load.hpp"
#include "process.hpp"
#include "record.hpp"
#include "replay.hpp"
#include "run_report.hpp"
#include "support/fault_proxy.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"
#include "token_erasure.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using redlock_torture::env_number;
using redlock_torture::monotonic_ns;
using redlock_torture::say;
namespace fs = std::filesystem;

constexpr std::size_t node_count = 5;
constexpr auto max_ttl = 1000ms;
constexpr auto waiter_ttl = 2000ms;
// The workers' operations are split between the kinds by resource (worker.cpp, --kinds):
// the same workers, the same time, each kind about a fifth of it. 'torture:f' is a reentrant
// lock, 'torture:g' a lock in a session ('torture:d' is the permit rush's, 'torture:e' the
// election's).
constexpr int semaphore_permits = 2;
auto torture_workload(int threads) -> redlock_torture::workload {
    return {.resources = {"torture:a", "torture:b", "torture:c", "torture:f", "torture:g"},
            .uses = "x,rw," + std::to_string(semaphore_permits) + ",re,s",
            .permits = semaphore_permits,
            .threads = threads,
            .clients = 1,
            .permit_hold_ms = -1,
            .wait_modes = {}};
}
// The permit rush (issue 36): worker processes of their own, each with several clients,
// whose every thread takes a permit of one more semaphore of 2, waits for it in any of the
// three waiting modes, and holds it for a few ms only. Waiters then race (a broadcast wakes
// them all at once) from clients whose grants reach the nodes in different orders, so that
// the nodes hand out different permits to one attempt, attempts are lost, and the slower
// nodes' answers come in the loss grace. A waiting attempt that counted such late yeses
// for different permits together was granted a permit no majority held (more than K
// holders, a permit index past K); the run must catch it every time.
auto rush_workload(int threads, int clients, int hold_ms) -> redlock_torture::workload {
    return {.resources = {"torture:d"},
            .uses = std::to_string(semaphore_permits),
            .permits = semaphore_permits,
            .threads = threads,
            .clients = clients,
            .permit_hold_ms = hold_ms,
            .wait_modes = "targeted,broadcast,fair"};
}

auto node_config_json(const std::vector<std::uint16_t>& ports, std::uint64_t quarantine_ms)
    -> std::string {
    std::string nodes;
    for (const auto port : ports) {
        if (!nodes.empty()) nodes += ", ";
        nodes += R"({"host": "127.0.0.1", "port": )" + std::to_string(port) + "}";
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
    const int candidates = static_cast<int>(env_number("REDLOCK_TORTURE_CANDIDATES", 3));
    const bool leader_kills = env_number("REDLOCK_TORTURE_LEADER_KILLS", 1) != 0;
    const int observers =
        candidates > 0 ? static_cast<int>(env_number("REDLOCK_TORTURE_OBSERVERS", 1)) : 0;
    const auto load = torture_workload(threads);
    const int rush_workers = static_cast<int>(env_number("REDLOCK_TORTURE_RUSH_WORKERS", 1));
    const auto rush =
        rush_workload(static_cast<int>(std::clamp<std::uint64_t>(
                          env_number("REDLOCK_TORTURE_RUSH_THREADS", 6), 1, 64)),
                      static_cast<int>(std::clamp<std::uint64_t>(
                          env_number("REDLOCK_TORTURE_RUSH_CLIENTS", 3), 1, 64)),
                      static_cast<int>(env_number("REDLOCK_TORTURE_RUSH_HOLD_MS", 60)));
    // Every resource, for the figures and the checks that each was held.
    auto all_load = load;
    if (rush_workers > 0) all_load.resources.push_back(rush.resources.front());
    const auto& resources = all_load.resources;
    const auto started = std::chrono::steady_clock::now();
    const std::int64_t origin = monotonic_ns();

    const fs::path dir =
        fs::temp_directory_path() / "redlock-tests" / ("torture-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    say("torture: seed " + std::to_string(seed) + " (replay with REDLOCK_TORTURE_SEED=" +
        std::to_string(seed) + "), " + std::to_string(seconds) + " s of faults, " +
        std::to_string(workers) + " workers of " + std::to_string(threads) + " threads, " +
        std::to_string(resources.size()) + " resources (" + load.uses +
        ": a plain lock, readers and writers, a semaphore, a reentrant lock, locks in sessions), " +
        std::to_string(node_count) + " nodes (" + std::to_string(persistent_nodes) +
        " with appendfsync always, the others in memory " +
        std::string{delayed_restart ? "with the delayed-restart rule" : "restarted without delay"} +
        "; clients' restart quarantine " + std::to_string(quarantine_ms) + " ms), at most " +
        std::to_string(max_impaired) + " impaired at once; " + std::to_string(candidates) +
        " election candidates" + (leader_kills ? " (the leader SIGKILLed now and then)" : "") +
        ", " + std::to_string(observers) +
        " observers; permit rush: " + std::to_string(rush_workers) + " workers of " +
        std::to_string(rush.clients) + " clients, " + std::to_string(rush.threads) +
        " threads, holds of 0-" + std::to_string(rush.permit_hold_ms) + " ms on '" +
        rush.resources.front() + "' (a semaphore of " + std::to_string(semaphore_permits) +
        ", waiting " + rush.wait_modes + "); run directory " + dir.string());
    // A run that fails, or throws, says how to replay it and where to look.
    redlock_torture::failure_notice notice{[&] {
        say("torture FAILED with seed " + std::to_string(seed) + "; replay it with:\n  " +
            redlock_torture::replay_command("REDLOCK_TORTURE_", "REDLOCK_TORTURE_SEED", seed) +
            "\nrun directory kept: " + dir.string() + "\nthe last 30 lines of " +
            (dir / "faults.log").string() + ":" + redlock_torture::tail_of(dir / "faults.log", 30));
    }};

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
    std::vector<std::uint16_t> proxy_ports;
    for (const auto& p : proxies) proxy_ports.push_back(p.port());
    std::ofstream{config} << node_config_json(proxy_ports, quarantine_ms);

    // ---- workers -----------------------------------------------------------------------------
    std::vector<redlock_torture::child_process> pool;
    for (int i = 0; i < workers; ++i) {
        pool.emplace_back(redlock_torture::worker_argv(REDLOCK_TORTURE_WORKER, i,
                                                       seed * 1000 + static_cast<std::uint64_t>(i),
                                                       dir, config, load),
                          dir / ("worker-" + std::to_string(i) + ".log"));
    }
    for (int i = workers; i < workers + rush_workers; ++i) {
        pool.emplace_back(redlock_torture::worker_argv(REDLOCK_TORTURE_WORKER, i,
                                                       seed * 1000 + static_cast<std::uint64_t>(i),
                                                       dir, config, rush),
                          dir / ("worker-" + std::to_string(i) + ".log"));
    }
    std::vector<std::string> problems;
    bool died_early = false;

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
    const auto config_of = [quarantine_ms](const std::vector<std::uint16_t>& ports) {
        return node_config_json(ports, quarantine_ms);
    };
    redlock_torture::election_load election{{.candidate = REDLOCK_TORTURE_CANDIDATE,
                                             .candidates = candidates,
                                             .seed = seed,
                                             .kills = leader_kills},
                                            dir,
                                            proxies,
                                            config_of,
                                            fault_log};
    redlock_torture::observer_load watchers{
        {.program = REDLOCK_TORTURE_OBSERVER, .observers = observers, .seed = seed},
        dir,
        proxies,
        config_of,
        fault_log};
    const auto fault_end = std::chrono::steady_clock::now() + std::chrono::seconds{seconds};
    auto next_progress = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < fault_end) {
        injector.step();
        election.step();
        watchers.step();
        died_early = redlock_torture::note_early_deaths(pool, problems);
        died_early = election.note_early_deaths(problems) || died_early;
        died_early = watchers.note_early_deaths(problems) || died_early;
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
            for (const auto& [kind, n] : election.counts())
                line += " candidate_" + kind + "=" + std::to_string(n);
            for (const auto& [kind, n] : watchers.counts())
                line += " observer_" + kind + "=" + std::to_string(n);
            say(line);
        }
        std::this_thread::sleep_for(2ms);
    }
    // The crashed nodes stay down through the final stretch: an in-memory node restarted
    // empty together with one that missed a fencing round can erase the last term (README,
    // "Where tokens come from"), and the stretch's campaigns would then repeat it. A majority
    // is up (at most max_impaired nodes are down), so a leader can be elected meanwhile.
    injector.heal_links();
    election.heal_all();
    watchers.heal_all();
    std::fprintf(fault_log, "%lld healed\n", static_cast<long long>(monotonic_ns()));
    std::fflush(fault_log);
    // The final stretch: one leader in office for 3 s after the heal (longer than the longest
    // latency a healed proxy may still deliver at, and a reconnect), proclaiming every 200 ms.
    std::optional<redlock_torture::final_stretch> stretch;
    if (candidates > 0 && problems.empty()) stretch = election.final_stretch(3s, 20s);
    // The candidates step down now: a lock one of them abandons meanwhile expires during the
    // wait below, before the keys are looked at.
    election.stop(died_early, problems);
    const std::int64_t stepped_down = monotonic_ns();
    std::fprintf(fault_log, "%lld candidates stopped\n", static_cast<long long>(stepped_down));
    // Every observer is told there is no leader any more: by the resignations' messages, or
    // at the validity end of a lock that was not released.
    watchers.await_no_leader(stretch ? stretch->until_ns : stepped_down, max_ttl + 5s);
    watchers.stop(problems);
    injector.restart_crashed();
    std::fprintf(fault_log, "%lld restarted\n", static_cast<long long>(monotonic_ns()));
    // Every key written during the faults has expired by now (TTLs are at most max_ttl,
    // and a renewed lock is released by its holder): what is left at the end was left by
    // the releases of a healthy cluster. A write a slowed proxy had already read still lands
    // up to the longest latency after the heal (the proxy keeps its schedule), after its
    // client gave up on that connection and released elsewhere: a 20 s run (seed 4069453072)
    // found a reader's key from such a write, 2.5 s after a 2500 ms latency was healed, with
    // 65 ms to live, when this wait was max_ttl + 1.5 s.
    const auto longest_latency = *std::ranges::max_element(settings.latencies);
    std::this_thread::sleep_for(longest_latency + max_ttl + 1500ms);

    // ---- stop the workers: they finish their critical section and release -----------------
    const bool all_stopped = redlock_torture::stop_workers(pool, died_early, problems);
    std::fprintf(fault_log, "%lld workers stopped (all=%d)\n",
                 static_cast<long long>(monotonic_ns()), all_stopped ? 1 : 0);
    std::fclose(fault_log);

    // ---- leftovers, right after the releases ----------------------------------------------
    // Every hold must be gone; a semaphore's count and the wait queues may stay, as long as
    // their TTL ends in time (key_shapes.hpp): nobody refreshes them any more.
    const redlock_torture::leftover_limits limits{max_ttl.count(), waiter_ttl.count()};
    std::size_t fence_counters = 0;
    for (const auto& node : nodes)
        fence_counters += redlock_torture::keys_matching(node, "redlock-fence:*").size();
    const auto keys = redlock_torture::summarize_leftovers(redlock_torture::scan_keys(nodes, {}),
                                                           limits, fence_counters);
    const std::size_t keys_left = keys.left;

    // ---- the records -------------------------------------------------------------------------
    const auto records = redlock_torture::read_records(dir, workers + rush_workers, problems);
    auto report = redlock_torture::check_holds(records.holds);
    auto elected = election.check(problems);
    // A repeated term or a lock's token that did not rise, where the faults could have caused
    // it (README, "Where tokens come from"), is reported, not failed; the others stay in the
    // reports' inversions (token_erasure.hpp).
    const auto faults_seen = redlock_torture::read_fault_log(dir / "faults.log");
    const auto repeats =
        redlock_torture::take_explained_repeats(elected.report, faults_seen, node_count);
    const auto lock_repeats =
        redlock_torture::take_explained_inversions(report, faults_seen, node_count);
    const auto watched = watchers.check(elected.leads, elected.campaign_calls, stretch, problems);
    const auto took = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - started);

    // ---- figures -------------------------------------------------------------------------
    std::string faults;
    for (const auto& [kind, n] : injector.counts()) {
        if (kind == "skipped") continue;
        faults += (faults.empty() ? "" : ", ") + kind + " " + std::to_string(n);
    }
    redlock_torture::print_figures(
        seed, records, report, all_load,
        "  faults injected: " + faults + " (skipped by the impairment limit " +
            std::to_string(injector.counts().at("skipped")) + ", at most " +
            std::to_string(injector.max_impaired()) + " nodes impaired at once)",
        keys, took.count());
    say(redlock_torture::describe_explained_inversions(lock_repeats, origin, 10));
    if (candidates > 0) {
        redlock_torture::print_election_figures(elected, election);
        say(redlock_torture::describe_explained_repeats(repeats, origin, 10));
    }
    if (observers > 0) redlock_torture::print_observer_figures(watched, watchers);
    auto total = [&records](const char* key) { return std::to_string(records.total(key)); };
    say("  reentrant and session locks: valid holds reentrant " +
        std::to_string(redlock_torture::holds_via(report, redlock_torture::hold_via::reentrant)) +
        " (re-entries " + total("reentries") + ", mismatches " + total("reentry_mismatch") +
        ", re-entries given a new lock once the old was invalid " + total("reentry_new_locks") +
        ", not tried on an invalid lock " + total("reentries_skipped") + ", failed " +
        total("reentry_failures") + "), in a session " +
        std::to_string(redlock_torture::holds_via(report, redlock_torture::hold_via::session)) +
        " (sessions opened " + total("session_opens") + ", lost " + total("session_lost") +
        ", closed by their holder " + total("session_closes") + " (failed " +
        total("session_close_failures") + "), acquisitions refused for a closed session " +
        total("session_refused") + "); acquisitions refused as invalid " +
        total("invalid_argument"));

    std::string details = redlock_torture::describe_problems(report, origin, 10) +
                          redlock_torture::describe_unreadable(records, 10) +
                          redlock_torture::describe_election_problems(elected.report, origin, 10);
    for (const auto& r : watched.reports)
        details += redlock_torture::describe_observer_problems(r, origin, 10);
    if (!details.empty() || keys_left > 0) {
        say(details + (keys_left > 0 ? "\nKEYS LEFT:" + keys.details : "") +
            "\n(times in ms since the start; faults in " + (dir / "faults.log").string() +
            ", stamped in ns on the same clock; origin " + std::to_string(origin) + " ns)");
    }

    for (const auto& p : problems) FAIL_CHECK(p);
    CHECK(records.unreadable == 0);
    CHECK(report.overlaps.empty());
    CHECK(report.inversions.empty());
    CHECK(report.excesses.empty());
    CHECK_MESSAGE(report.impossibles.empty(),
                  "SAFETY: " << report.impossibles.size()
                             << " holds named an impossible value (see IMPOSSIBLE HOLD above)");
    CHECK(keys_left == 0);
    CHECK(records.total("kind_mismatch") == 0);
    CHECK(records.total("fencing_mismatch") == 0);
    // A re-entry gives back the same lock (token, kind, hold count), and a release of a hold
    // but the last leaves the others open; no acquisition is refused as invalid (a session
    // closed meanwhile is counted apart).
    CHECK(records.total("reentry_mismatch") == 0);
    CHECK(records.total("invalid_argument") == 0);
    // The point of the unfenced writers and the threads: the checks above saw hand-offs
    // (one thread per worker cannot have any: its only waiter is never beside its hold).
    const bool handoffs_seen = threads < 2 || records.total("handoffs") > 0;
    CHECK(handoffs_seen);
    bool all_held = true;
    for (const auto& r : resources) {
        CHECK(redlock_torture::holds_of(report, r) > 0);
        all_held = all_held && redlock_torture::holds_of(report, r) > 0;
    }
    for (const char* kind : {"writer", "reader", "permit"}) {
        CHECK(redlock_torture::holds_of_kind(report, kind) > 0);
        all_held = all_held && redlock_torture::holds_of_kind(report, kind) > 0;
    }
    // The reentrant lock was re-entered, and locks were held in sessions.
    for (const auto via :
         {redlock_torture::hold_via::reentrant, redlock_torture::hold_via::session}) {
        CHECK(redlock_torture::holds_via(report, via) > 0);
        all_held = all_held && redlock_torture::holds_via(report, via) > 0;
    }
    CHECK(records.total("reentries") > 0);
    all_held = all_held && records.total("reentries") > 0;
    // The election: safe, and live enough to have been tested (two leaderships at least, and
    // in a run of 30 s or more a failover by expiry).
    CHECK(elected.unreadable == 0);
    CHECK(elected.report.overlaps.empty());
    CHECK(elected.report.inversions.empty());  // those the faults log does not explain
    CHECK(elected.report.write_problems.empty());
    CHECK(elected.report.early_successors.empty());
    const auto& e = elected.report;
    // The observers: no term going back, no invented leader, the end of the run told.
    CHECK(watched.unreadable == 0);
    for (const auto& r : watched.reports) {
        CHECK(r.decreases.empty());
        CHECK(r.invented.empty());
        CHECK(r.eventual.empty());
    }
    // Kills that found a leader in office, and a final leader to check delivery against.
    const bool kills_done = !leader_kills || candidates == 0 || seconds < 30 ||
                            (e.killed_in_office > 0 && e.failovers_after_kill > 0);
    CHECK(kills_done);
    const bool final_checked =
        observers == 0 ||
        std::ranges::all_of(watched.reports, [](const auto& r) { return r.eventual_checked; });
    CHECK(final_checked);
    const bool election_live = candidates == 0 || (e.leaderships - e.never_valid >= 2 &&
                                                   (seconds < 30 || e.failovers_by_expiry > 0));
    CHECK(election_live);
    const bool passed =
        problems.empty() && records.unreadable == 0 && report.ok() && keys_left == 0 &&
        records.total("kind_mismatch") == 0 && records.total("fencing_mismatch") == 0 &&
        records.total("reentry_mismatch") == 0 && records.total("invalid_argument") == 0 &&
        handoffs_seen && elected.unreadable == 0 && e.ok() && election_live && watched.ok() &&
        kills_done && final_checked && all_held;
    if (!passed) return;  // the notice says the rest
    notice.passed();
    if (!keep) {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    } else {
        say("torture: run directory kept: " + dir.string());
    }
}
