#pragma once

// What the torture tests share around their fault phase: their environment variables, the
// workers' command line, stopping them, reading their records back, the keys left at the
// end, and the figures they print. torture_test.cpp (five standalone masters behind fault
// proxies) and cluster_members_test.cpp (three Redis Clusters under failovers) differ only in
// their nodes and their faults; the workers, the checker and the report are the same.

#include "checker.hpp"
#include "leftovers.hpp"
#include "process.hpp"
#include "record.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace redlock_torture {

/// The variable as a number; `fallback` when it is unset or empty.
[[nodiscard]] auto env_number(const char* name, std::uint64_t fallback) -> std::uint64_t;
/// One line on stdout, flushed (ctest -V shows it as it comes).
void say(const std::string& text);

/// How the workers contend: the resources, and how each is used (worker.cpp, --kinds).
struct workload {
    std::vector<std::string> resources;
    std::string uses;  ///< "x,rw,2": a plain lock, a read-write lock, a semaphore of 2
    int permits = 2;   ///< the semaphore's K
    int threads = 2;   ///< per worker, sharing its client
    int clients = 1;   ///< per worker; thread t uses client t % clients
    /// --permit-hold-ms: permits held 0 to this many ms; -1: as long as other holds.
    int permit_hold_ms = -1;
    /// --wait-modes: each acquisition waits in one of these, at random; empty: the default.
    std::string wait_modes;
};

/// The worker's command line: `worker` (a path) with its config, id, output and seed.
[[nodiscard]] auto worker_argv(const std::string& worker, int id, std::uint64_t seed,
                               const std::filesystem::path& dir,
                               const std::filesystem::path& config, const workload& load)
    -> std::vector<std::string>;
/// `dir`/worker-<id>.records
[[nodiscard]] auto record_file(const std::filesystem::path& dir, int id) -> std::filesystem::path;

/// A line per worker that died during the fault phase; appends to `problems`. True if any did.
auto note_early_deaths(std::vector<child_process>& pool, std::vector<std::string>& problems)
    -> bool;
/// Closes every worker's stdin (each finishes its critical section and releases), waits up to
/// 20 s for each, kills the ones that do not stop. Appends what went wrong to `problems` (a
/// worker that did not exit cleanly, unless `died_early` already said so). True if all stopped.
auto stop_workers(std::vector<child_process>& pool, bool died_early,
                  std::vector<std::string>& problems) -> bool;

/// The workers' files, together.
struct run_records {
    std::vector<hold_record> holds;
    std::map<std::string, std::uint64_t> totals;  ///< the summaries' counts, summed
    std::size_t unreadable = 0;
    /// Each line that could not be read, whole, after its file's name and a colon.
    std::vector<std::string> unreadable_lines;
    [[nodiscard]] auto total(const std::string& key) const -> std::uint64_t;
};
/// Reads worker-0 .. worker-(workers-1); a worker without a summary is a problem.
[[nodiscard]] auto read_records(const std::filesystem::path& dir, int workers,
                                std::vector<std::string>& problems) -> run_records;

/// "UNREADABLE RECORD LINE worker-3.records: <the line>" for each of the first `limit`
/// unreadable lines, one a line (each after a newline); empty when there are none.
[[nodiscard]] auto describe_unreadable(const run_records& records, std::size_t limit)
    -> std::string;

/// The keys left once every worker has released (key_shapes.hpp's rules).
struct leftover_summary {
    std::size_t left = 0;            ///< leaks: holds, or keys without a TTL or too long a one
    std::size_t expiring = 0;        ///< bookkeeping keys that expire in time
    std::size_t fence_counters = 0;  ///< kept on purpose: they never expire
    std::string details;             ///< one line per leak
};
[[nodiscard]] auto summarize_leftovers(const std::vector<leftover>& keys,
                                       const leftover_limits& limits, std::size_t fence_counters)
    -> leftover_summary;

/// Per resource, from the checker's report: the holds, and the most holders at once.
[[nodiscard]] auto holds_of(const check_report& report, const std::string& resource) -> std::size_t;
[[nodiscard]] auto holds_of_kind(const check_report& report, const char* kind) -> std::size_t;

/// The figures every torture run prints, "torture figures (seed S):" then one line each:
/// acquisitions, holds, `faults_line` as it is, the clients' counters, kinds, hand-offs,
/// checks and runtime.
void print_figures(std::uint64_t seed, const run_records& records, const check_report& report,
                   const workload& load, const std::string& faults_line,
                   const leftover_summary& keys, std::int64_t seconds);

}  // namespace redlock_torture
