// The torture test on Redis Cluster members: the quorum is three Redis Clusters (each 2 shards,
// each master with 1 replica: 12 redis-server processes, cluster-node-timeout 1000 ms, built by
// tests/support/cluster_member), and a seeded schedule (cluster_faults.hpp) fails them over,
// forced (the master SIGKILLed, its replica promoted, the crashed node restarted later as a
// replica) and manual (CLUSTER FAILOVER), and reshards the slots of the torture resources
// between a member's two masters, at most one member impaired at a time. The workers, their
// lock kinds (a plain lock, a read-write lock, a semaphore of 2), the checker and the end-of-run
// key check are torture_test.cpp's (run_report.hpp): no writer overlaps another holder of its
// resource while both believe their lock valid, at most 2 permits at once, fenced writers'
// tokens strictly increase (a reader's keeps up), and no hold is left on any member's masters
// once every worker has released.
//
// The clients run with the default failover rule (README, "Cluster and Sentinel members"): a
// slot whose new master was not a master in the client's previous map does not count for
// restart_quarantine_ms, here 1000 ms, the longest TTL the workers use. A forced failover loses
// what the replica had not received; the quarantine is what must keep a lost grant from being
// granted again, and the promoted replica is made to lose every hold in those slots
// (cluster_faults.hpp), so that it has to. REDLOCK_TORTURE_WAIT_REPLICAS=1 runs the other
// configuration: every write confirmed by WAIT 1 (the one replica each master has), and no
// quarantine.
//
// Beside the workers, torture_test.cpp's election candidates (election_load.hpp, candidate.cpp)
// campaign for one election, 'torture:e', on the same members: each leader writes to a fenced
// store, then resigns, or abandons its leadership and makes a late write with its old term; the
// leader is SIGKILLed now and then and a fresh candidate takes its place; candidates are paused
// (SIGSTOP). A cluster client follows the slot map to the addresses the nodes announce, which
// no proxy of one candidate can stand in for, so the candidates' own reconnect storms and
// partitions are not injected here (cluster_election.hpp steps them on a thread of their own,
// since a cluster fault blocks for seconds). The election's slot is one the member faults aim
// at, and a lossy forced failover drops its hold and leader key there too. After the faults,
// one leader holds office for 3 s (the final stretch), then the candidates resign. Their records
// are checked as torture_test.cpp's (election_checker.hpp): no two leaderships overlap, a killed
// leader's successor starts after its validity, every write carries the term of a leadership of
// its candidate (made within it unless marked late), and the replayed fenced store takes every
// leader's writes and refuses a stale term once a newer leader has written.
//
// Terms must strictly increase, except where the member faults explain a repeat. What the
// README promises here ("Cluster and Sentinel members", rule 3 of "Safety and its limits"): the
// quarantine keeps a lock granted before a failover from being granted again while it may be
// held, so leaderships never overlap. (A client started after a failover cannot see it: a
// kill's replacement, or a candidate's new client after it abandoned. But a rival then still
// needs a second member without the leader's hold, and one member is impaired at a time, for
// the quarantine and 2 s more, longer than a term of office outside the final stretch: an
// overlap fails the run.) The quarantine does not guard the fence counter, which gives a term:
// a promoted replica that had not received the counter's last raise is, for that counter, a node
// restarted empty, and "Where tokens come from" says that restarts that empty nodes, together
// with nodes that missed the earlier confirm round, can erase the last term. So the checker
// applies token_erasure.hpp's rule with the members as its nodes (cluster_faults::timeline()):
// a repeat of leader L1's term by a later L2 is accepted, and printed, only when the members
// that may have missed L1's confirm (a fault of the member meeting [L1's campaign call, its
// win]: a failover until its quarantine and margin are over, a slot move until it settled, a
// crashed node until it is back) and the members failed over by force between L1's call and
// L2's win are together a majority, 2 of 3. Any other repeat is TERM NOT INCREASING and fails
// the run: some member of L2's majority took L1's confirm and was never emptied, and counters
// only rise (MIGRATE moves them whole). The rule is necessary, not sufficient: the lossy
// failovers here drop holds and leader keys, never a fence counter, so only replication lag at
// the SIGKILL can lose one, and an explained repeat should be rare (look at it). The workers'
// fencing tokens keep their stricter check: no inversion at all.
//
// Environment:
//   REDLOCK_TORTURE_SECONDS  length of the fault phase (default 60)
//   REDLOCK_TORTURE_SEED     seed of the fault schedule and the workers (default: random,
//                            printed for replay)
//   REDLOCK_TORTURE_WORKERS  worker processes (default 4)
//   REDLOCK_TORTURE_THREADS  threads per worker, sharing its client (default 2); with 2 or
//                            more, the run fails without a hand-off
//   REDLOCK_TORTURE_KEEP     1: keep the run directory (records, logs, faults.log) on success
//   REDLOCK_TORTURE_WAIT_REPLICAS  each member's wait_replicas (default 0; 1: every master's
//                            replica must confirm each write, and the quarantine defaults to 0)
//   REDLOCK_TORTURE_QUARANTINE_MS  the clients' restart_quarantine_ms (default 1000 with
//                            wait_replicas 0, else 0). 0 with wait_replicas 0 is unsafe on
//                            purpose: the lossy failovers then give the checker work
//   REDLOCK_TORTURE_LOSSY    0: a promoted replica keeps every key replication gave it (on
//                            loopback, all of them); 1 (the default with wait_replicas 0): it
//                            loses the torture resources' holds in the slots it took over
//                            (cluster_faults.hpp)
//   REDLOCK_TORTURE_CANDIDATES  election candidate processes (default 3; 0: none)
//   REDLOCK_TORTURE_LEADER_KILLS  0: never SIGKILL the leading candidate (default 1)

#include "checker.hpp"
#include "cluster_election.hpp"
#include "cluster_faults.hpp"
#include "cluster_setup.hpp"
#include "election_load.hpp"
#include "leftovers.hpp"
#include "process.hpp"
#include "record.hpp"
#include "replay.hpp"
#include "run_report.hpp"
#include "support/cluster_member.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
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

constexpr std::size_t member_count = 3;
constexpr auto max_ttl = 1000ms;  // the workers' and the candidates' longest TTL
constexpr auto waiter_ttl = 2000ms;
constexpr int semaphore_permits = 2;

}  // namespace

TEST_CASE("torture: contending workers on three Redis Cluster members under failovers") {
    const std::uint64_t seconds = env_number("REDLOCK_TORTURE_SECONDS", 60);
    const std::uint64_t seed = env_number("REDLOCK_TORTURE_SEED", std::random_device{}());
    const int workers =
        static_cast<int>(std::max<std::uint64_t>(env_number("REDLOCK_TORTURE_WORKERS", 4), 1));
    const int threads = static_cast<int>(
        std::clamp<std::uint64_t>(env_number("REDLOCK_TORTURE_THREADS", 2), 1, 64));
    const bool keep = env_number("REDLOCK_TORTURE_KEEP", 0) == 1;
    const std::uint64_t wait_replicas = env_number("REDLOCK_TORTURE_WAIT_REPLICAS", 0);
    // With wait_replicas, every acknowledged write is on the replica: nothing to lose.
    const bool lossy = env_number("REDLOCK_TORTURE_LOSSY", wait_replicas > 0 ? 0 : 1) != 0;
    const std::uint64_t quarantine_ms =
        env_number("REDLOCK_TORTURE_QUARANTINE_MS",
                   wait_replicas > 0 ? 0 : static_cast<std::uint64_t>(max_ttl.count()));
    const int candidates = static_cast<int>(env_number("REDLOCK_TORTURE_CANDIDATES", 3));
    const bool leader_kills = env_number("REDLOCK_TORTURE_LEADER_KILLS", 1) != 0;
    const std::string election_name = "torture:e";
    const redlock_torture::workload load{.resources = {"torture:a", "torture:b", "torture:c"},
                                         .uses = "x,rw," + std::to_string(semaphore_permits),
                                         .permits = semaphore_permits,
                                         .threads = threads,
                                         .clients = 1,
                                         .permit_hold_ms = -1,
                                         .wait_modes = {}};
    const auto started = std::chrono::steady_clock::now();
    const std::int64_t origin = monotonic_ns();

    const fs::path dir = fs::temp_directory_path() / "redlock-tests" /
                         ("torture-cluster-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    say("torture (cluster members): seed " + std::to_string(seed) +
        " (replay with REDLOCK_TORTURE_SEED=" + std::to_string(seed) + "), " +
        std::to_string(seconds) + " s of faults, " + std::to_string(workers) + " workers of " +
        std::to_string(threads) + " threads, resources " + load.uses + "; " +
        std::to_string(member_count) +
        " Redis Cluster members of 2 shards, 1 replica per master; wait_replicas " +
        std::to_string(wait_replicas) + ", clients' restart quarantine " +
        std::to_string(quarantine_ms) + " ms; forced failovers " +
        (lossy ? "lose the holds in the slots they move" : "lose nothing on purpose") + "; " +
        std::to_string(candidates) + " election candidates on '" + election_name + "'" +
        (leader_kills ? " (the leader SIGKILLed now and then)" : "") + "; run directory " +
        dir.string());
    // A run that fails, or throws, says how to replay it and where to look.
    redlock_torture::failure_notice notice{[&] {
        say("torture (cluster members) FAILED with seed " + std::to_string(seed) +
            "; replay it with:\n  " +
            redlock_torture::replay_command("REDLOCK_TORTURE_", "REDLOCK_TORTURE_SEED", seed) +
            "\nrun directory kept: " + dir.string() + "\nthe last 30 lines of " +
            (dir / "faults.log").string() + ":" + redlock_torture::tail_of(dir / "faults.log", 30));
    }};

    // ---- the members: 3 clusters of 4 nodes ---------------------------------------------------
    std::vector<redlock_test::cluster_member> members;
    members.reserve(member_count);
    for (std::size_t m = 0; m < member_count; ++m) {
        members.emplace_back(redlock_test::cluster_member_options{
            .shards = 2, .replicas = 1, .node_timeout = 1000ms, .server = {}});
    }
    const fs::path config = dir / "members.json";
    const redlock_torture::cluster_client_settings clients{.wait_replicas = wait_replicas,
                                                           .quarantine_ms = quarantine_ms,
                                                           .ttl = max_ttl,
                                                           .waiter_ttl = waiter_ttl};
    std::ofstream{config} << redlock_torture::members_config_json(members, clients);

    // ---- workers --------------------------------------------------------------------------------
    std::vector<redlock_torture::child_process> pool;
    for (int i = 0; i < workers; ++i) {
        pool.emplace_back(redlock_torture::worker_argv(REDLOCK_TORTURE_WORKER, i,
                                                       seed * 1000 + static_cast<std::uint64_t>(i),
                                                       dir, config, load),
                          dir / ("worker-" + std::to_string(i) + ".log"));
    }
    std::vector<std::string> problems;
    bool died_early = false;

    // ---- faults ---------------------------------------------------------------------------------
    std::FILE* fault_log = std::fopen((dir / "faults.log").c_str(), "w");
    REQUIRE(fault_log != nullptr);
    std::fprintf(fault_log, "%lld start seed=%llu\n", static_cast<long long>(origin),
                 static_cast<unsigned long long>(seed));
    std::vector<std::string> lock_keys;
    for (const auto& r : load.resources) lock_keys.push_back("redlock:{" + r + "}");
    // The election's slot too: its leader's hold and leader key are dropped as the workers' are.
    if (candidates > 0) lock_keys.push_back("redlock:{" + election_name + "}");
    redlock_torture::cluster_fault_settings settings;
    settings.quarantine = std::chrono::milliseconds{quarantine_ms};
    settings.lose_holds = lossy;
    redlock_torture::cluster_faults faults{members, lock_keys, settings, seed, fault_log};
    say("torture (cluster members): at the start " + faults.layout());
    // The candidates reach the members directly (no proxies): only pauses and kills are theirs.
    redlock_torture::election_load election{{.candidate = REDLOCK_TORTURE_CANDIDATE,
                                             .election = election_name,
                                             .candidates = candidates,
                                             .seed = seed,
                                             .kills = leader_kills},
                                            dir,
                                            {},
                                            [&](const std::vector<std::uint16_t>&) {
                                                return redlock_torture::members_config_json(
                                                    members, clients);
                                            },
                                            fault_log};
    std::optional<redlock_torture::election_driver> driver;
    driver.emplace(election);
    const auto fault_end = std::chrono::steady_clock::now() + std::chrono::seconds{seconds};
    auto next_progress = std::chrono::steady_clock::now() + 30s;
    // A member that does not settle in time fails the run, and the records are still checked.
    auto guarded = [&](const char* phase, auto&& operation) {
        try {
            operation();
        } catch (const std::exception& e) {
            problems.push_back(std::string{phase} + ": " + e.what());
        }
    };
    while (std::chrono::steady_clock::now() < fault_end && problems.empty() && !driver->failed()) {
        guarded("a fault", [&] { faults.step(); });
        died_early = redlock_torture::note_early_deaths(pool, problems) || died_early;
        if (std::chrono::steady_clock::now() >= next_progress) {
            next_progress += 30s;
            std::string line = "torture (cluster members): " +
                               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                  std::chrono::steady_clock::now() - started)
                                                  .count()) +
                               " s, faults so far:";
            for (const auto& [kind, n] : faults.counts())
                line += " " + kind + "=" + std::to_string(n);
            say(line);
        }
        std::this_thread::sleep_for(5ms);
    }
    died_early = driver->stop(problems) || died_early;
    election.heal_all();
    guarded("healing", [&] { faults.heal_all(); });
    guarded("healing", [&] {
        for (auto& member : members) member.await_settled(20s);
    });
    std::fprintf(fault_log, "%lld healed\n", static_cast<long long>(monotonic_ns()));
    std::fflush(fault_log);
    // The final stretch (election_load.hpp): one leader in office for 3 s after the heal. Then
    // the candidates step down, before the wait below: a lock one of them abandons meanwhile has
    // expired when the keys are looked at.
    std::optional<redlock_torture::final_stretch> stretch;
    if (candidates > 0 && problems.empty()) stretch = election.final_stretch(3s, 20s);
    election.stop(died_early, problems);
    std::fprintf(fault_log, "%lld candidates stopped\n", static_cast<long long>(monotonic_ns()));
    std::fflush(fault_log);
    // Every key written during the faults has expired by now, and every quarantine is over:
    // what is left at the end was left by the releases of healthy members.
    std::this_thread::sleep_for(max_ttl + 1500ms);

    // ---- stop the workers: they finish their critical section and release -------------------
    const bool all_stopped = redlock_torture::stop_workers(pool, died_early, problems);
    std::fprintf(fault_log, "%lld workers stopped (all=%d)\n",
                 static_cast<long long>(monotonic_ns()), all_stopped ? 1 : 0);
    std::fclose(fault_log);

    // ---- leftovers on every member's masters, right after the releases ------------------------
    std::vector<redlock_torture::named_node> masters;
    std::size_t fence_counters = 0;
    std::string layout;
    guarded("the final layout", [&] { layout = faults.layout(); });
    for (std::size_t m = 0; m < members.size(); ++m) {
        for (std::size_t i = 0; i < members[m].size(); ++i) {
            const auto& node = members[m].node(i);
            if (!node.running() || members[m].role(i) != "master") continue;
            masters.push_back({"member " + std::to_string(m) + " node " + std::to_string(i) +
                                   " (port " + std::to_string(node.port()) + ")",
                               &node});
            fence_counters += redlock_torture::keys_matching(node, "redlock-fence:*").size();
        }
    }
    const redlock_torture::leftover_limits limits{max_ttl.count(), waiter_ttl.count()};
    const auto keys = redlock_torture::summarize_leftovers(redlock_torture::scan_keys(masters, {}),
                                                           limits, fence_counters);

    // ---- the records, the checks, the figures ---------------------------------------------------
    const auto records = redlock_torture::read_records(dir, workers, problems);
    const auto report = redlock_torture::check_holds(records.holds);
    const auto took = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - started);
    const auto& counts = faults.counts();
    const std::uint64_t failovers = counts.at("forced_failover") + counts.at("manual_failover");
    const std::size_t warnings = redlock_torture::failover_warnings(dir, "worker-", workers);
    redlock_torture::print_figures(
        seed, records, report, load,
        "  faults injected: forced failovers " + std::to_string(counts.at("forced_failover")) +
            ", restarts " + std::to_string(counts.at("restart")) + ", manual failovers " +
            std::to_string(counts.at("manual_failover")) + ", slot moves " +
            std::to_string(counts.at("move_slot")) + ", hold keys dropped by failovers " +
            std::to_string(counts.at("holds_dropped")) + " (skipped " +
            std::to_string(counts.at("skipped")) + ", at most " +
            std::to_string(faults.max_impaired()) +
            " members impaired at once); the clients' failover warnings " +
            std::to_string(warnings) + "; masters at the end: " + layout,
        keys, took.count());
    // The election: its figures, and its terms judged against the members' faults (above).
    redlock_torture::cluster_election_verdict elected;
    if (candidates > 0) {
        elected = redlock_torture::judge_cluster_election(election, leader_kills, faults.timeline(),
                                                          member_count, seconds, stretch, origin,
                                                          problems);
    }

    const std::string details = redlock_torture::describe_problems(report, origin, 10) +
                                redlock_torture::describe_unreadable(records, 10) + elected.details;
    if (!details.empty() || keys.left > 0) {
        say(details + (keys.left > 0 ? "\nKEYS LEFT:" + keys.details : "") +
            "\n(times in ms since the start; faults in " + (dir / "faults.log").string() +
            ", stamped in ns on the same clock; origin " + std::to_string(origin) + " ns)");
    }

    for (const auto& p : problems) FAIL_CHECK(p);
    CHECK(records.unreadable == 0);
    CHECK(report.overlaps.empty());
    CHECK(report.inversions.empty());
    CHECK(report.excesses.empty());
    CHECK(report.impossibles.empty());  // safety findings: see IMPOSSIBLE HOLD above
    CHECK(keys.left == 0);
    CHECK(records.total("kind_mismatch") == 0);
    CHECK(records.total("fencing_mismatch") == 0);
    CHECK(faults.max_impaired() <= 1);
    // The faults happened, and the clients applied the failover rule to them.
    CHECK(failovers > 0);
    if (quarantine_ms > 0 && failovers > 0) CHECK(warnings > 0);
    // The lossy failovers took something (the resources are held most of the time): the hook
    // and the DELs work, rather than leaving the replica whole unnoticed.
    if (lossy && counts.at("forced_failover") >= 3) CHECK(counts.at("holds_dropped") > 0);
    // As in torture_test.cpp: a release handed a lock to a waiting thread of its client, on
    // cluster members too (their release script runs on the slot's master).
    const bool handoffs_seen = threads < 2 || records.total("handoffs") > 0;
    CHECK(handoffs_seen);
    for (const auto& r : load.resources) CHECK(redlock_torture::holds_of(report, r) > 0);
    for (const char* kind : {"writer", "reader", "permit"})
        CHECK(redlock_torture::holds_of_kind(report, kind) > 0);
    // The election: safe (the repeats the members' faults explain were taken out), and live
    // enough to have been tested.
    CHECK(elected.outcome.unreadable == 0);
    CHECK(elected.outcome.report.overlaps.empty());
    CHECK(elected.outcome.report.inversions.empty());  // TERM NOT INCREASING
    CHECK(elected.outcome.report.write_problems.empty());
    CHECK(elected.outcome.report.early_successors.empty());
    CHECK(elected.kills_done);
    CHECK(elected.live);
    CHECK(elected.stretch_found);
    const bool passed = problems.empty() && records.unreadable == 0 && report.ok() &&
                        keys.left == 0 && records.total("kind_mismatch") == 0 &&
                        records.total("fencing_mismatch") == 0 && handoffs_seen && failovers > 0 &&
                        elected.passed();
    if (!passed) return;  // the notice says the rest
    notice.passed();
    if (!keep) {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    } else {
        say("torture (cluster members): run directory kept: " + dir.string());
    }
}
