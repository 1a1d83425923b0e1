#pragma once

// The election part of the cluster-member torture test (cluster_members_test.cpp): the
// candidates of torture_test.cpp's election workload (election_load.hpp), run on the cluster
// members, and their records checked as there, with the members' fault timeline
// (cluster_faults::timeline()) in place of the standalone run's faults log for telling a
// repeated term within the README's limit from a bug (token_erasure.hpp).

#include "election_load.hpp"
#include "observer_checker.hpp"
#include "token_erasure.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace redlock_torture {

/// Steps an election_load on a thread of its own while the test's thread runs the cluster
/// faults, each of which blocks for seconds while its member settles: the candidates' pauses
/// end on time and the leader kills keep their pace meanwhile. Nothing else may touch the
/// load until stop() has returned.
class election_driver {
public:
    explicit election_driver(election_load& load);
    election_driver(const election_driver&) = delete;
    auto operator=(const election_driver&) -> election_driver& = delete;
    ~election_driver();

    /// A candidate exited during the run: the thread has stopped stepping.
    [[nodiscard]] auto failed() const noexcept -> bool { return died_.load(); }
    /// Stops and joins the thread; appends the deaths it noted to `problems`. True if any.
    auto stop(std::vector<std::string>& problems) -> bool;

private:
    election_load& load_;
    std::atomic<bool> died_{false};
    std::atomic<bool> stopping_{false};
    std::vector<std::string> problems_;  ///< the thread's own until stop()
    std::thread thread_;
};

/// The election's records, checked, and what the run asks of them.
struct cluster_election_verdict {
    election_outcome outcome;  ///< its report keeps the repeats the timeline does not explain
    std::vector<explained_repeat> repeats;  ///< terms repeated within the README's limit
    bool kills_done = true;     ///< with kills, in a run of 30 s or more: a leader killed in office
                                ///< and a failover after it
    bool live = true;           ///< two valid leaderships at least, and (30 s or more) a failover
                                ///< by expiry
    bool stretch_found = true;  ///< a leader held office for the final stretch
    std::string details;        ///< the problems, one paragraph each (empty: none)
    [[nodiscard]] auto passed() const -> bool {
        return outcome.unreadable == 0 && outcome.report.ok() && kills_done && live &&
               stretch_found;
    }
};

/// Reads and checks the candidates' records (election_load::check()), takes out the repeated
/// terms that `members`' faults explain (`member_count` members as the nodes), and prints the
/// election's figures as torture_test.cpp does, with the explained repeats. `seconds`: the
/// fault phase; `stretch`: what final_stretch() found. Times in ms since `origin_ns`.
[[nodiscard]] auto judge_cluster_election(
    const election_load& load, bool kills, const fault_timeline& members, std::size_t member_count,
    std::uint64_t seconds, const std::optional<final_stretch>& stretch, std::int64_t origin_ns,
    std::vector<std::string>& problems) -> cluster_election_verdict;

}  // namespace redlock_torture
