#pragma once

// The torture test's election observers: processes (observer.cpp) that follow the election with
// client::observe, each through five fault proxies of its own (chained to the node proxies, so
// the node faults reach them too), under faults aimed at them alone, every 0.3-2 s while none
// is on:
// - a reconnect storm: every 20-150 ms for 1-4 s, all of its connections reset (RST);
// - a partition: its proxies to 3 of the 5 nodes blackholed (two times in three), or to 1 or
//   2, for 0.3-3 s.
// Their reports are checked against the candidates' leaderships (observer_checker.hpp).

#include "observer_checker.hpp"
#include "process.hpp"
#include "support/fault_proxy.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace redlock_torture {

struct observer_settings {
    std::string program;  ///< the observer program (a path)
    std::string election = "torture:e";
    int observers = 1;
    std::uint64_t seed = 0;
};

struct observer_outcome {
    std::vector<observer_report> reports;  ///< one per observer
    std::size_t unreadable = 0;
    [[nodiscard]] auto ok() const -> bool;
};

class observer_load {
public:
    observer_load(observer_settings settings, const std::filesystem::path& dir,
                  const std::vector<redlock_test::fault_proxy>& node_proxies,
                  const std::function<std::string(const std::vector<std::uint16_t>&)>& config_of,
                  std::FILE* log);
    observer_load(const observer_load&) = delete;
    auto operator=(const observer_load&) -> observer_load& = delete;
    ~observer_load() = default;

    /// Ends the faults that are due and, when it is time, injects the next one.
    void step();
    void heal_all();
    /// Appends a line per observer that exited during the run; true if any did.
    auto note_early_deaths(std::vector<std::string>& problems) -> bool;
    /// Waits (at most `limit`) until every observer's last report says no leader and came
    /// after `after_ns`: what eventual delivery expects once every candidate has stepped down.
    void await_no_leader(std::int64_t after_ns, std::chrono::milliseconds limit);
    /// Closes their standard input and waits for them.
    void stop(std::vector<std::string>& problems);
    [[nodiscard]] auto check(const std::vector<lead_record>& leads,
                             const std::vector<mark_record>& campaign_calls,
                             const std::optional<final_stretch>& stretch,
                             std::vector<std::string>& problems) const -> observer_outcome;

    /// Faults injected, by kind: storm, storm_resets, partition_majority, partition_minority.
    [[nodiscard]] auto counts() const -> const std::map<std::string, std::uint64_t>& {
        return counts_;
    }
    [[nodiscard]] auto observers() const noexcept -> int { return settings_.observers; }

private:
    using clock = std::chrono::steady_clock;
    struct fault_state {
        std::optional<clock::time_point> storm_until;
        clock::time_point next_reset{};
        std::optional<clock::time_point> heal_at;
        [[nodiscard]] auto faulted() const -> bool { return storm_until || heal_at; }
    };

    auto uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t;
    void inject(std::size_t o, clock::time_point now);
    void note(const char* what, std::size_t o, const std::string& detail = {});
    [[nodiscard]] auto file(std::size_t o) const -> std::filesystem::path;

    observer_settings settings_;
    std::filesystem::path dir_;
    std::FILE* log_;
    std::mt19937_64 rng_;
    std::vector<std::vector<redlock_test::fault_proxy>> proxies_;  ///< per observer, per node
    std::vector<child_process> pool_;
    std::vector<fault_state> state_;
    std::vector<clock::time_point> next_fault_;
    std::map<std::string, std::uint64_t> counts_;
};

/// The figures of the observers, a few lines (say()).
void print_observer_figures(const observer_outcome& outcome, const observer_load& load);

}  // namespace redlock_torture
