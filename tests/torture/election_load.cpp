#include "election_load.hpp"

#include "link_faults.hpp"
#include "record.hpp"
#include "run_report.hpp"

#include <algorithm>
#include <csignal>
#include <fstream>
#include <signal.h>
#include <stdexcept>

namespace redlock_torture {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

auto election_outcome::total(const std::string& key) const -> std::uint64_t {
    const auto it = totals.find(key);
    return it == totals.end() ? 0 : it->second;
}

election_load::election_load(
    election_settings settings, const fs::path& dir,
    const std::vector<redlock_test::fault_proxy>& node_proxies,
    const std::function<std::string(const std::vector<std::uint16_t>&)>& config_of, std::FILE* log)
    : settings_{std::move(settings)},
      dir_{dir},
      log_{log},
      rng_{settings_.seed},
      state_(static_cast<std::size_t>(std::max(settings_.candidates, 0))),
      next_fault_{clock::now() + settings_.first_fault},
      next_kill_{clock::now() + settings_.first_kill} {
    for (const char* kind : {"storm", "storm_resets", "partition_majority", "partition_minority",
                             "pause", "kill", "kill_missed"})
        counts_[kind] = 0;
    if (node_proxies.empty()) counts_["link_skipped"] = 0;
    for (int c = 0; c < settings_.candidates; ++c) {
        auto& own = proxies_.emplace_back();
        std::vector<std::uint16_t> ports;
        for (const auto& node : node_proxies) {
            own.emplace_back(node.port());
            ports.push_back(own.back().port());
        }
        std::ofstream{dir_ / ("candidate-slot-" + std::to_string(c) + ".json")} << config_of(ports);
        ids_.push_back(-1);
        tails_.emplace_back();
        launch(static_cast<std::size_t>(c), next_id_++);
    }
}

void election_load::launch(std::size_t c, int id) {
    child_process started{
        std::vector<std::string>{
            settings_.candidate, "--config",
            (dir_ / ("candidate-slot-" + std::to_string(c) + ".json")).string(), "--id",
            std::to_string(id), "--out", file(id).string(), "--seed",
            std::to_string(settings_.seed * 1000 + 500 + static_cast<std::uint64_t>(id)),
            "--election", settings_.election},
        dir_ / ("candidate-" + std::to_string(id) + ".log")};
    if (c < pool_.size()) {
        pool_[c] = std::move(started);
    } else {
        pool_.push_back(std::move(started));
    }
    ids_[c] = id;
    tails_[c] = record_tail{file(id), 0, std::nullopt};
}

election_load::~election_load() {
    // A paused candidate would never see its stdin close: let it go on before it is killed.
    for (auto& p : pool_) {
        if (!p.exited()) ::kill(p.pid(), SIGCONT);
    }
}

auto election_load::file(int id) const -> fs::path {
    return dir_ / ("candidate-" + std::to_string(id) + ".records");
}

auto election_load::uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t {
    return std::uniform_int_distribution<std::int64_t>{lo, hi}(rng_);
}

void election_load::note(const char* what, std::size_t c, const std::string& detail) {
    if (log_ == nullptr) return;
    std::fprintf(log_, "%lld candidate-%s candidate=%d slot=%zu pid=%d%s%s\n",
                 static_cast<long long>(monotonic_ns()), what, ids_[c], c,
                 static_cast<int>(pool_[c].pid()), detail.empty() ? "" : " ", detail.c_str());
    std::fflush(log_);
}

void election_load::step() {
    const auto now = clock::now();
    for (std::size_t c = 0; c < state_.size(); ++c) {
        candidate_state& s = state_[c];
        if (s.storm_until) {
            if (*s.storm_until <= now) {
                s.storm_until.reset();
                note("storm-end", c);
            } else if (s.next_reset <= now) {
                for (auto& p : proxies_[c])
                    p.drop_connections(redlock_test::fault_proxy::drop_mode::reset);
                ++counts_["storm_resets"];
                s.next_reset = now + milliseconds{uniform(20, 150)};
            }
        }
        if (s.heal_at && *s.heal_at <= now) {
            for (auto& p : proxies_[c]) p.heal();
            s.heal_at.reset();
            note("heal", c);
        }
        if (s.resume_at && *s.resume_at <= now) {
            ::kill(pool_[c].pid(), SIGCONT);
            s.resume_at.reset();
            note("resume", c);
        }
    }
    if (!state_.empty() && now >= next_fault_) inject(now);
    if (!state_.empty() && settings_.kills && now >= next_kill_) try_kill(now);
}

void election_load::inject(clock::time_point now) {
    // A fixed number of draws per fault: the schedule depends on the seed alone.
    const auto roll = uniform(0, 99);
    const auto c = static_cast<std::size_t>(uniform(0, std::ssize(state_) - 1));
    const auto a = uniform(0, 1'000'000);
    next_fault_ = now + milliseconds{uniform(200, settings_.max_gap.count())};
    const auto faulted = std::ranges::count_if(state_, [](const auto& s) { return s.faulted(); });
    candidate_state& s = state_[c];
    // One candidate always free of these faults, and one fault per candidate at a time.
    if (s.faulted() || faulted + 1 >= std::ssize(state_)) {
        note("skip", c);
        return;
    }
    if (roll < 75 && proxies_[c].empty()) {  // a storm or a partition, without links to cut
        ++counts_["link_skipped"];
        note("skip", c, "no-proxies");
        return;
    }
    if (roll < 40) {  // a reconnect storm
        const milliseconds span{1000 + a % 3001};
        s.storm_until = now + span;
        s.next_reset = now;
        ++counts_["storm"];
        note("storm", c, "span_ms=" + std::to_string(span.count()));
    } else if (roll < 75) {  // a partition from a majority, or from a minority
        const link_partition cut = cut_off(proxies_[c], a);
        s.heal_at = now + cut.span;
        ++counts_[cut.majority ? "partition_majority" : "partition_minority"];
        note("partition", c, "nodes=" + cut.nodes + " span_ms=" + std::to_string(cut.span.count()));
    } else {  // a pause
        const milliseconds span{300 + (a / 13) % 2201};
        ::kill(pool_[c].pid(), SIGSTOP);
        s.resume_at = now + span;
        ++counts_["pause"];
        note("pause", c, "span_ms=" + std::to_string(span.count()));
    }
}

void election_load::heal_all() {
    for (std::size_t c = 0; c < state_.size(); ++c) {
        candidate_state& s = state_[c];
        for (auto& p : proxies_[c]) p.heal();
        if (s.resume_at) ::kill(pool_[c].pid(), SIGCONT);
        s = candidate_state{};
    }
    if (!state_.empty()) note("healed", 0);
}

auto election_load::note_early_deaths(std::vector<std::string>& problems) -> bool {
    bool died = false;
    for (auto& p : pool_) {
        if (p.exited()) {  // a killed one was replaced at once
            problems.push_back("candidate pid " + std::to_string(p.pid()) + " " + p.describe() +
                               " during the run; see " + p.log().string());
            died = true;
        }
    }
    return died;
}

void election_load::stop(bool died_early, std::vector<std::string>& problems) {
    for (auto& p : pool_) p.close_stdin();
    for (auto& p : pool_) {
        if (!p.wait_for(20s)) {
            p.kill();
            problems.push_back("candidate pid " + std::to_string(p.pid()) +
                               " did not stop within 20 s of its stdin closing");
        } else if (!p.exited_cleanly() && !died_early) {
            problems.push_back("candidate pid " + std::to_string(p.pid()) + " " + p.describe() +
                               "; see " + p.log().string());
        }
    }
}

auto election_load::check(std::vector<std::string>& problems) const -> election_outcome {
    election_outcome outcome;
    std::vector<lead_record>& leads = outcome.leads;
    std::vector<write_record> writes;
    for (int c = 0; c < next_id_; ++c) {
        auto contents = read_candidate_file(file(c));
        outcome.unreadable += contents.unreadable_lines;
        leads.insert(leads.end(), contents.leads.begin(), contents.leads.end());
        if (auto killed = killed_lead(contents, settings_.election)) leads.push_back(*killed);
        writes.insert(writes.end(), contents.writes.begin(), contents.writes.end());
        outcome.campaign_calls.insert(outcome.campaign_calls.end(), contents.campaign_calls.begin(),
                                      contents.campaign_calls.end());
        if (contents.killed) continue;  // no summary: it was killed
        if (!contents.summary) {
            problems.push_back("candidate " + std::to_string(c) + " wrote no summary to " +
                               file(c).string());
            continue;
        }
        for (const auto& [key, n] : contents.summary->counts) {
            // A longest is not a sum.
            auto& total = outcome.totals[key];
            total = key.starts_with("longest") ? std::max(total, n) : total + n;
        }
    }
    outcome.report = check_election(leads, writes);
    return outcome;
}

void print_election_figures(const election_outcome& outcome, const election_load& load) {
    const auto& r = outcome.report;
    auto total = [&](const char* key) { return std::to_string(outcome.total(key)); };
    auto ms = [](std::int64_t ns) { return std::to_string(ns / 1'000'000); };
    auto ends = [&](const char* how) {
        const auto it = r.ends.find(how);
        return std::to_string(it == r.ends.end() ? 0 : it->second);
    };
    say("  election (" + std::to_string(load.candidates()) + " candidates; the counts from " +
        "their summaries leave out the killed ones'): campaigns " + total("campaigns") + ", won " +
        total("won") + " (contended " + total("contended") + ", quorum_unreachable " +
        total("quorum_unreachable") + ", not_held " + total("not_held") + ", cancelled " +
        total("cancelled") + ", other " +
        std::to_string(outcome.total("other_error") + outcome.total("validity_expired") +
                       outcome.total("client_stopped")) +
        "); leaderships " + std::to_string(r.leaderships) + " (never valid " +
        std::to_string(r.never_valid) + "), terms " + std::to_string(r.lowest_term) + ".." +
        std::to_string(r.highest_term));
    say("  leaderships ended: resigned " + ends("resigned") + ", abandoned " + ends("abandoned") +
        ", lost " + ends("lost") + ", stopped " + ends("stopped") + "; failovers by expiry " +
        std::to_string(r.failovers_by_expiry) + " (longest gap " + ms(r.longest_expiry_gap_ns) +
        " ms), handovers by resignation " + std::to_string(r.handovers_by_resignation) +
        " (longest gap " + ms(r.longest_resign_gap_ns) + " ms); longest reaction to on_lost " +
        total("longest_lost_reaction_us") + " us; proclaims " + total("proclaims") + " (failed " +
        total("proclaim_failures") + "), resign errors " + total("resign_failures"));
    std::string faults;
    for (const auto& [kind, n] : load.counts())
        faults += (faults.empty() ? "" : ", ") + kind + " " + std::to_string(n);
    say("  candidate faults: " + faults);
    say("  leaders killed: " + std::to_string(load.counts().at("kill")) + " (in office by their " +
        "records " + std::to_string(r.killed_in_office) + "), failovers after a kill " +
        std::to_string(r.failovers_after_kill) +
        " (the successor's start after the killed leader's validity end: " +
        ms(r.shortest_kill_gap_ns) + ".." + ms(r.longest_kill_gap_ns) +
        " ms); successors before it " + std::to_string(r.early_successors.size()));
    say("  fenced store: writes " + std::to_string(r.writes) + " (late " +
        std::to_string(r.late_writes) + ", of which after a newer term was seen " +
        total("late_after_newer") + "), accepted " + std::to_string(r.accepted) + ", stale " +
        std::to_string(r.stale_writes) + " (refused " + std::to_string(r.stale_rejected) +
        ", accepted before any newer leader wrote " + std::to_string(r.stale_unopposed) +
        "); checks: overlapping leaderships " + std::to_string(r.overlaps.size()) +
        ", terms not increasing " + std::to_string(r.inversions.size()) + ", bad writes " +
        std::to_string(r.write_problems.size()) + ", unreadable record lines " +
        std::to_string(outcome.unreadable));
}

}  // namespace redlock_torture
