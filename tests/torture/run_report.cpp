#include "run_report.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace redlock_torture {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

auto env_number(const char* name, std::uint64_t fallback) -> std::uint64_t {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    return std::strtoull(text, nullptr, 10);
}

void say(const std::string& text) {
    std::fputs(text.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

auto record_file(const fs::path& dir, int id) -> fs::path {
    return dir / ("worker-" + std::to_string(id) + ".records");
}

auto worker_argv(const std::string& worker, int id, std::uint64_t seed, const fs::path& dir,
                 const fs::path& config, const workload& load) -> std::vector<std::string> {
    std::string resources;
    for (const auto& r : load.resources) resources += (resources.empty() ? "" : ",") + r;
    std::vector<std::string> argv{worker,
                                  "--config",
                                  config.string(),
                                  "--id",
                                  std::to_string(id),
                                  "--out",
                                  record_file(dir, id).string(),
                                  "--seed",
                                  std::to_string(seed),
                                  "--resources",
                                  resources,
                                  "--kinds",
                                  load.uses,
                                  "--threads",
                                  std::to_string(load.threads)};
    if (load.clients != 1) argv.insert(argv.end(), {"--clients", std::to_string(load.clients)});
    if (load.permit_hold_ms >= 0)
        argv.insert(argv.end(), {"--permit-hold-ms", std::to_string(load.permit_hold_ms)});
    if (!load.wait_modes.empty()) argv.insert(argv.end(), {"--wait-modes", load.wait_modes});
    return argv;
}

auto note_early_deaths(std::vector<child_process>& pool, std::vector<std::string>& problems)
    -> bool {
    bool died = false;
    for (auto& w : pool) {
        if (w.exited()) {
            problems.push_back("worker pid " + std::to_string(w.pid()) + " " + w.describe() +
                               " during the run; see " + w.log().string());
            died = true;
        }
    }
    return died;
}

auto stop_workers(std::vector<child_process>& pool, bool died_early,
                  std::vector<std::string>& problems) -> bool {
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
    return all_stopped;
}

auto run_records::total(const std::string& key) const -> std::uint64_t {
    const auto it = totals.find(key);
    return it == totals.end() ? 0 : it->second;
}

auto read_records(const fs::path& dir, int workers, std::vector<std::string>& problems)
    -> run_records {
    run_records records;
    for (int i = 0; i < workers; ++i) {
        auto file = read_worker_file(record_file(dir, i));
        records.unreadable += file.unreadable.size();
        for (auto& line : file.unreadable)
            records.unreadable_lines.push_back(record_file(dir, i).filename().string() + ": " +
                                               std::move(line));
        records.holds.insert(records.holds.end(), file.holds.begin(), file.holds.end());
        if (!file.summary) {
            problems.push_back("worker " + std::to_string(i) + " wrote no summary to " +
                               record_file(dir, i).string());
            continue;
        }
        for (const auto& [key, n] : file.summary->counts) records.totals[key] += n;
    }
    return records;
}

auto describe_unreadable(const run_records& records, std::size_t limit) -> std::string {
    std::string text;
    for (std::size_t i = 0; i < records.unreadable_lines.size() && i < limit; ++i)
        text += "\nUNREADABLE RECORD LINE " + records.unreadable_lines[i];
    if (records.unreadable_lines.size() > limit) {
        text += "\n(" + std::to_string(records.unreadable_lines.size() - limit) +
                " more unreadable lines)";
    }
    return text;
}

auto summarize_leftovers(const std::vector<leftover>& keys, const leftover_limits& limits,
                         std::size_t fence_counters) -> leftover_summary {
    leftover_summary summary;
    summary.fence_counters = fence_counters;
    for (const auto& key : keys) {
        if (const auto leak = leak_reason(key.shape, key.pttl_ms, limits)) {
            ++summary.left;
            summary.details += "\n  " + key.describe() + ": " + *leak;
        } else {
            ++summary.expiring;
        }
    }
    return summary;
}

auto holds_of(const check_report& report, const std::string& resource) -> std::size_t {
    const auto it = report.holds_per_resource.find(resource);
    return it == report.holds_per_resource.end() ? 0 : it->second;
}

auto holds_of_kind(const check_report& report, const char* kind) -> std::size_t {
    const auto it = report.holds_per_kind.find(kind);
    return it == report.holds_per_kind.end() ? 0 : it->second;
}

void print_figures(std::uint64_t seed, const run_records& records, const check_report& report,
                   const workload& load, const std::string& faults_line,
                   const leftover_summary& keys, std::int64_t seconds) {
    auto total = [&](const char* key) { return std::to_string(records.total(key)); };
    std::string per_resource;
    std::string most_at_once;
    for (const auto& r : load.resources) {
        if (!per_resource.empty()) per_resource += ", ";
        per_resource += r + " " + std::to_string(holds_of(report, r));
        const auto most = report.most_at_once.find(r);
        most_at_once += (most_at_once.empty() ? "" : ", ") + r + " " +
                        std::to_string(most == report.most_at_once.end() ? 0 : most->second);
    }
    say("torture figures (seed " + std::to_string(seed) + "):");
    say("  acquisitions attempted " + total("attempts") + ", granted " + total("granted") + " (" +
        per_resource + "); failed: contended " + total("contended") + ", quorum_unreachable " +
        total("quorum_unreachable") + ", validity_expired " + total("validity_expired") +
        ", cancelled " + total("cancelled") + ", other " +
        std::to_string(records.total("other_error") + records.total("client_stopped")));
    say("  holds: granted but already invalid " + total("never_valid") + ", invalid at the end " +
        total("invalid_at_end") + " (of which lost by auto-renewal " + total("lost") +
        "), renewals " + total("renewals") + ", manual extends " + total("extends") + " (failed " +
        total("extend_failures") + "), releases deleting on a majority " +
        total("released_on_majority") + ", release errors " + total("release_failures"));
    say(faults_line);
    say("  clients: attempts " + total("client_attempts") + ", requests " + total("requests") +
        ", request timeouts " + total("timeouts") + ", connects " + total("connects") +
        ", node restarts seen " + total("node_restarts_seen"));
    say("  kinds: valid holds by kind: writer " + std::to_string(holds_of_kind(report, "writer")) +
        ", reader " + std::to_string(holds_of_kind(report, "reader")) + ", permit " +
        std::to_string(holds_of_kind(report, "permit")) +
        "; most holders at once: " + most_at_once + "; kind mismatches " + total("kind_mismatch") +
        ", fencing mismatches " + total("fencing_mismatch"));
    say("  hand-offs: " + total("handoffs") + " (releases passing the lock to a waiter of any " +
        "client); writers granted without a token " + total("granted_unfenced") + " (valid " +
        std::to_string(report.unfenced_writers) + ", checked for overlaps)");
    say("  checks: holds checked " + std::to_string(report.holds) + ", overlaps " +
        std::to_string(report.overlaps.size()) + ", token inversions " +
        std::to_string(report.inversions.size()) + ", more than " + std::to_string(load.permits) +
        " permits at once " + std::to_string(report.excesses.size()) +
        ", impossible holds (a permit past K or below 0, a writer's token 0) " +
        std::to_string(report.impossibles.size()) + ", keys left " + std::to_string(keys.left) +
        " (bookkeeping keys expiring in time: " + std::to_string(keys.expiring) +
        "; fence counters kept: " + std::to_string(keys.fence_counters) +
        "), unreadable record lines " + std::to_string(records.unreadable));
    say("  runtime " + std::to_string(seconds) + " s");
}

}  // namespace redlock_torture
