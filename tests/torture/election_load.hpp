#pragma once

// The torture test's election workload: candidate processes (candidate.cpp) campaigning for
// one election beside the lock workers, each reaching every node through proxies of its own
// (chained to the node's proxy, so the node faults reach them too), and the faults aimed at
// one candidate at a time:
// - a reconnect storm: every 20-150 ms for 1-4 s, all of the candidate's connections reset (RST);
// - a partition: the candidate's proxies to a majority of the nodes (or to a minority)
//   blackholed for 0.3-3 s: cut off from the quorum, a leader loses its leadership;
// - a pause: SIGSTOP for 0.3-2.5 s, then SIGCONT: a leader that wakes up past its validity.
// At most all but one candidate are faulted at once. Besides, every 5-10 s, the candidate
// that leads by its records is SIGKILLed (stopped first, its records read again, then killed)
// and a fresh candidate process, with an id of its own, takes its place and its proxies.
// At the end, in final mode, one leader holds office for a while (final_stretch()). Then
// their records are checked (election_checker.hpp).
//
// Without node proxies (cluster_members_test.cpp: a cluster member's client follows the slot
// map to the addresses the nodes announce, which no proxy of one candidate can stand in for),
// the candidates reach the nodes directly: the storms and partitions are drawn as always but
// skipped, and the pauses and the leader kills go on.

#include "election_checker.hpp"
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

struct election_settings {
    std::string candidate;  ///< the candidate program (a path)
    std::string election = "torture:e";
    int candidates = 3;
    std::uint64_t seed = 0;
    std::chrono::milliseconds first_fault{1000};
    std::chrono::milliseconds max_gap{1500};  ///< between two candidate faults
    bool kills = true;                        ///< SIGKILL the leader now and then
    std::chrono::milliseconds first_kill{4000};
};

/// What the candidates' records say, checked.
struct election_outcome {
    election_report report;
    std::map<std::string, std::uint64_t> totals;  ///< the candidates' summaries, summed
    std::size_t unreadable = 0;
    std::vector<lead_record> leads;  ///< every leadership, killed ones made up
    std::vector<mark_record> campaign_calls;
    [[nodiscard]] auto total(const std::string& key) const -> std::uint64_t;
};

class election_load {
public:
    /// Starts the candidates. `node_proxies`: the node proxies their own chain to;
    /// `config_of`: a client configuration naming these ports as the nodes. With no node
    /// proxies, the candidates get none of their own and `config_of` is given no port.
    election_load(election_settings settings, const std::filesystem::path& dir,
                  const std::vector<redlock_test::fault_proxy>& node_proxies,
                  const std::function<std::string(const std::vector<std::uint16_t>&)>& config_of,
                  std::FILE* log);
    election_load(const election_load&) = delete;
    auto operator=(const election_load&) -> election_load& = delete;
    ~election_load();

    /// Ends the faults that are due and, when it is time, injects the next one.
    void step();
    /// Ends every fault: continues paused candidates, heals their proxies.
    void heal_all();
    /// Appends a line per candidate that exited during the run; true if any did.
    auto note_early_deaths(std::vector<std::string>& problems) -> bool;
    /// Once every fault is healed: final mode on, then waits (at most `limit`) until one
    /// candidate has led, by its records, for `hold` since the later of now and its win. That
    /// stretch, or nullopt.
    auto final_stretch(std::chrono::milliseconds hold, std::chrono::milliseconds limit)
        -> std::optional<redlock_torture::final_stretch>;
    /// Closes their standard input (each steps down and exits) and waits for them.
    void stop(bool died_early, std::vector<std::string>& problems);
    /// Reads and checks their records; a candidate without a summary is a problem.
    [[nodiscard]] auto check(std::vector<std::string>& problems) const -> election_outcome;

    /// Faults injected, by kind: storm, storm_resets, partition_majority, partition_minority,
    /// pause, kill (a leader killed and replaced), kill_missed (stopped, but its records said
    /// it had stepped down by then: let go on). Without proxies, the storms and partitions
    /// drawn are counted as link_skipped.
    [[nodiscard]] auto counts() const -> const std::map<std::string, std::uint64_t>& {
        return counts_;
    }
    [[nodiscard]] auto candidates() const noexcept -> int { return settings_.candidates; }

private:
    using clock = std::chrono::steady_clock;
    struct candidate_state {
        std::optional<clock::time_point> storm_until;
        clock::time_point next_reset{};
        std::optional<clock::time_point> heal_at;    ///< partitioned until then
        std::optional<clock::time_point> resume_at;  ///< paused until then
        [[nodiscard]] auto faulted() const -> bool { return storm_until || heal_at || resume_at; }
    };
    /// A candidate's records, read as they grow: whether it leads, by them.
    struct record_tail {
        std::filesystem::path file;
        std::uintmax_t offset = 0;
        std::optional<won_record> leading;
        void update();
    };

    void inject(clock::time_point now);
    /// Starts candidate process `id` in slot `c` (its proxies, its configuration).
    void launch(std::size_t c, int id);
    /// SIGKILLs the candidate that leads, if one does and is not paused, and replaces it.
    void try_kill(clock::time_point now);
    auto uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t;
    void note(const char* what, std::size_t c, const std::string& detail = {});
    [[nodiscard]] auto file(int id) const -> std::filesystem::path;

    election_settings settings_;
    std::filesystem::path dir_;
    std::FILE* log_;
    std::mt19937_64 rng_;
    std::vector<std::vector<redlock_test::fault_proxy>> proxies_;  ///< per candidate, per node
    std::vector<child_process> pool_;
    std::vector<int> ids_;  ///< the candidate each slot runs now
    std::vector<record_tail> tails_;
    std::vector<int> killed_;  ///< ids killed (no summary expected)
    int next_id_ = 0;
    std::vector<candidate_state> state_;
    clock::time_point next_fault_;
    clock::time_point next_kill_;
    std::map<std::string, std::uint64_t> counts_;
};

/// The figures of the election workload, a few lines (say()).
void print_election_figures(const election_outcome& outcome, const election_load& load);

}  // namespace redlock_torture
