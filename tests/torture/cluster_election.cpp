#include "cluster_election.hpp"

#include "election_checker.hpp"
#include "run_report.hpp"

#include <chrono>
#include <utility>

namespace redlock_torture {

using namespace std::chrono_literals;

election_driver::election_driver(election_load& load) : load_{load} {
    thread_ = std::thread{[this] {
        while (!stopping_.load()) {
            load_.step();
            if (load_.note_early_deaths(problems_)) {
                died_.store(true);
                return;
            }
            std::this_thread::sleep_for(2ms);
        }
    }};
}

election_driver::~election_driver() {
    stopping_.store(true);
    if (thread_.joinable()) thread_.join();
}

auto election_driver::stop(std::vector<std::string>& problems) -> bool {
    stopping_.store(true);
    if (thread_.joinable()) thread_.join();
    problems.insert(problems.end(), problems_.begin(), problems_.end());
    problems_.clear();
    return died_.load();
}

auto judge_cluster_election(const election_load& load, bool kills, const fault_timeline& members,
                            std::size_t member_count, std::uint64_t seconds,
                            const std::optional<final_stretch>& stretch, std::int64_t origin_ns,
                            std::vector<std::string>& problems) -> cluster_election_verdict {
    cluster_election_verdict v;
    v.outcome = load.check(problems);
    v.repeats = take_explained_repeats(v.outcome.report, members, member_count);
    const election_report& e = v.outcome.report;
    const bool long_run = seconds >= 30;
    v.kills_done = !kills || !long_run || (e.killed_in_office > 0 && e.failovers_after_kill > 0);
    v.live = e.leaderships - e.never_valid >= 2 && (!long_run || e.failovers_by_expiry > 0);
    v.stretch_found = stretch.has_value();

    print_election_figures(v.outcome, load);
    say("  final stretch: " +
        (stretch ? "a leader in office " +
                       std::to_string((stretch->until_ns - stretch->from_ns) / 1'000'000) +
                       " ms after the heal"
                 : std::string{"NOT FOUND (no leader held office for it)"}));
    // token_erasure's words are a standalone run's: here its nodes are the members, and an
    // in-memory node killed is a member whose master was failed over by force.
    say(describe_explained_repeats(v.repeats, origin_ns, 10) +
        (v.repeats.empty() ? ""
                           : "\n    (nodes are the members; \"in-memory nodes killed\" are "
                             "members failed over by force, their replica promoted)"));
    v.details = describe_election_problems(e, origin_ns, 10);
    if (!v.stretch_found)
        v.details += "\nNO FINAL STRETCH: no candidate led for the stretch after the heal";
    return v;
}

}  // namespace redlock_torture
