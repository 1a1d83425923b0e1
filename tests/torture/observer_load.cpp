#include "observer_load.hpp"

#include "link_faults.hpp"
#include "record.hpp"
#include "run_report.hpp"

#include <algorithm>
#include <fstream>
#include <thread>

namespace redlock_torture {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

auto observer_outcome::ok() const -> bool {
    return unreadable == 0 &&
           std::ranges::all_of(reports, [](const observer_report& r) { return r.ok(); });
}

observer_load::observer_load(
    observer_settings settings, const fs::path& dir,
    const std::vector<redlock_test::fault_proxy>& node_proxies,
    const std::function<std::string(const std::vector<std::uint16_t>&)>& config_of, std::FILE* log)
    : settings_{std::move(settings)},
      dir_{dir},
      log_{log},
      rng_{settings_.seed * 1000 + 900},
      state_(static_cast<std::size_t>(std::max(settings_.observers, 0))) {
    for (const char* kind : {"storm", "storm_resets", "partition_majority", "partition_minority"})
        counts_[kind] = 0;
    for (std::size_t o = 0; o < state_.size(); ++o) {
        auto& own = proxies_.emplace_back();
        std::vector<std::uint16_t> ports;
        for (const auto& node : node_proxies) {
            own.emplace_back(node.port());
            ports.push_back(own.back().port());
        }
        const fs::path config = dir_ / ("observer-" + std::to_string(o) + ".json");
        std::ofstream{config} << config_of(ports);
        pool_.emplace_back(
            std::vector<std::string>{settings_.program, "--config", config.string(), "--id",
                                     std::to_string(o), "--out", file(o).string(), "--election",
                                     settings_.election},
            dir_ / ("observer-" + std::to_string(o) + ".log"));
        next_fault_.push_back(clock::now() + milliseconds{uniform(1000, 2000)});
    }
}

auto observer_load::file(std::size_t o) const -> fs::path {
    return dir_ / ("observer-" + std::to_string(o) + ".records");
}

auto observer_load::uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t {
    return std::uniform_int_distribution<std::int64_t>{lo, hi}(rng_);
}

void observer_load::note(const char* what, std::size_t o, const std::string& detail) {
    if (log_ == nullptr) return;
    std::fprintf(log_, "%lld observer-%s observer=%zu pid=%d%s%s\n",
                 static_cast<long long>(monotonic_ns()), what, o, static_cast<int>(pool_[o].pid()),
                 detail.empty() ? "" : " ", detail.c_str());
    std::fflush(log_);
}

void observer_load::step() {
    const auto now = clock::now();
    for (std::size_t o = 0; o < state_.size(); ++o) {
        fault_state& s = state_[o];
        if (s.storm_until) {
            if (*s.storm_until <= now) {
                s.storm_until.reset();
                next_fault_[o] = now + milliseconds{uniform(300, 2000)};
                note("storm-end", o);
            } else if (s.next_reset <= now) {
                for (auto& p : proxies_[o])
                    p.drop_connections(redlock_test::fault_proxy::drop_mode::reset);
                ++counts_["storm_resets"];
                s.next_reset = now + milliseconds{uniform(20, 150)};
            }
        }
        if (s.heal_at && *s.heal_at <= now) {
            for (auto& p : proxies_[o]) p.heal();
            s.heal_at.reset();
            next_fault_[o] = now + milliseconds{uniform(300, 2000)};
            note("heal", o);
        }
        if (!s.faulted() && now >= next_fault_[o]) inject(o, now);
    }
}

void observer_load::inject(std::size_t o, clock::time_point now) {
    fault_state& s = state_[o];
    const auto roll = uniform(0, 99);
    const auto a = uniform(0, 1'000'000);
    if (roll < 50) {
        const milliseconds span{1000 + a % 3001};
        s.storm_until = now + span;
        s.next_reset = now;
        ++counts_["storm"];
        note("storm", o, "span_ms=" + std::to_string(span.count()));
        return;
    }
    const link_partition cut = cut_off(proxies_[o], a);
    s.heal_at = now + cut.span;
    ++counts_[cut.majority ? "partition_majority" : "partition_minority"];
    note("partition", o, "nodes=" + cut.nodes + " span_ms=" + std::to_string(cut.span.count()));
}

void observer_load::heal_all() {
    for (std::size_t o = 0; o < state_.size(); ++o) {
        for (auto& p : proxies_[o]) p.heal();
        state_[o] = fault_state{};
        note("healed", o);
    }
}

auto observer_load::note_early_deaths(std::vector<std::string>& problems) -> bool {
    bool died = false;
    for (auto& p : pool_) {
        if (p.exited()) {
            problems.push_back("observer pid " + std::to_string(p.pid()) + " " + p.describe() +
                               " during the run; see " + p.log().string());
            died = true;
        }
    }
    return died;
}

void observer_load::await_no_leader(std::int64_t after_ns, milliseconds limit) {
    const auto give_up = clock::now() + limit;
    for (std::size_t o = 0; o < pool_.size(); ++o) {
        while (clock::now() < give_up) {
            const auto seen = read_observer_file(file(o)).seen;
            if (!seen.empty() && !seen.back().leader && seen.back().at_ns > after_ns) break;
            std::this_thread::sleep_for(20ms);
        }
    }
}

void observer_load::stop(std::vector<std::string>& problems) {
    for (auto& p : pool_) p.close_stdin();
    for (auto& p : pool_) {
        if (!p.wait_for(20s)) {
            p.kill();
            problems.push_back("observer pid " + std::to_string(p.pid()) +
                               " did not stop within 20 s of its stdin closing");
        } else if (!p.exited_cleanly()) {
            problems.push_back("observer pid " + std::to_string(p.pid()) + " " + p.describe() +
                               "; see " + p.log().string());
        }
    }
}

auto observer_load::check(const std::vector<lead_record>& leads,
                          const std::vector<mark_record>& campaign_calls,
                          const std::optional<final_stretch>& stretch,
                          std::vector<std::string>& problems) const -> observer_outcome {
    observer_outcome outcome;
    for (std::size_t o = 0; o < state_.size(); ++o) {
        const auto contents = read_observer_file(file(o));
        outcome.unreadable += contents.unreadable_lines;
        if (!contents.summary)
            problems.push_back("observer " + std::to_string(o) + " wrote no summary to " +
                               file(o).string());
        outcome.reports.push_back(check_observer(contents.seen, leads, campaign_calls, stretch));
    }
    return outcome;
}

void print_observer_figures(const observer_outcome& outcome, const observer_load& load) {
    std::string faults;
    for (const auto& [kind, n] : load.counts())
        faults += (faults.empty() ? "" : ", ") + kind + " " + std::to_string(n);
    for (std::size_t o = 0; o < outcome.reports.size(); ++o) {
        const observer_report& r = outcome.reports[o];
        say("  observer " + std::to_string(o) + ": reports " + std::to_string(r.reports) +
            " (a leader " + std::to_string(r.leader_reports) + ", none " +
            std::to_string(r.none_reports) + "), terms seen " + std::to_string(r.terms_seen) +
            ", valid leaderships never seen " + std::to_string(r.terms_missed) +
            ", unrecorded (a campaign's attempt given up) " + std::to_string(r.unrecorded_seen) +
            "; longest naming a leader past its validity " +
            std::to_string(r.longest_stale_ns / 1'000'000) + " ms; final leader " +
            (r.eventual_checked ? "term " + std::to_string(r.final_term) : "not checked") +
            "; checks: terms decreasing " + std::to_string(r.decreases.size()) +
            ", invented leaders " + std::to_string(r.invented.size()) + ", end not reported " +
            std::to_string(r.eventual.size()));
    }
    say("  observer faults: " + faults + "; unreadable record lines " +
        std::to_string(outcome.unreadable));
}

}  // namespace redlock_torture
