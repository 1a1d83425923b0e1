#pragma once

// The torture test's election observer (observer.cpp): a process that calls client::observe on
// the election through fault proxies of its own, and writes one "seen" line per change it is
// told. Its records, and the checks on them against the candidates' leaderships.

#include "election_record.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock_torture {

/// One callback of client::observe: what a majority said, when the callback ran.
struct seen_record {
    int observer = 0;
    std::int64_t at_ns = 0;
    bool leader = false;     ///< a majority agreed on a leader
    std::uint64_t term = 0;  ///< the leader's term (0: none)
    int from = -1;           ///< the candidate the leader's value names ("candidate-N..."); -1
    std::uint64_t proclaimed = 0;
    std::uint64_t highest = 0;  ///< highest_term: the highest fence counter among the answers
    std::size_t agreeing = 0;
    std::size_t answered = 0;

    [[nodiscard]] auto format() const -> std::string;
    [[nodiscard]] auto describe(std::int64_t origin_ns) const -> std::string;
};

[[nodiscard]] auto parse_seen(std::string_view line) -> std::optional<seen_record>;
/// The candidate a value names: N for "candidate-N" or "candidate-N <anything>", else -1.
[[nodiscard]] auto candidate_of(std::string_view value) -> int;

struct observer_file {
    std::vector<seen_record> seen;
    std::optional<worker_summary> summary;
    std::size_t unreadable_lines = 0;
};

[[nodiscard]] auto read_observer_file(const std::filesystem::path& file) -> observer_file;

/// The end of the run, as the orchestrator made it: from `from_ns` (the faults healed, or the
/// final leader's win if later) to `until_ns` (the candidates told to stop) one candidate led
/// in its final mode, proclaiming every 200 ms; then every candidate stepped down and exited.
struct final_stretch {
    std::int64_t from_ns = 0;
    std::int64_t until_ns = 0;
};

struct observer_problem {
    seen_record seen;
    std::string why;
};

struct observer_report {
    std::size_t reports = 0;
    std::size_t leader_reports = 0;
    std::size_t none_reports = 0;
    std::size_t terms_seen = 0;    ///< distinct terms reported as leader
    std::size_t terms_missed = 0;  ///< valid leaderships whose term was never reported
    /// Reports of a leader whose candidate recorded no leadership of that term, from a
    /// campaign that failed after it had won the lock (its proclamation may have reached a
    /// majority, unconfirmed): accepted.
    std::size_t unrecorded_seen = 0;
    /// The longest an observer went on naming a leader past that leadership's validity end.
    std::int64_t longest_stale_ns = 0;
    bool eventual_checked = false;  ///< a final leader held through the final stretch
    std::uint64_t final_term = 0;

    std::vector<observer_problem> decreases;  ///< a term below one reported before
    std::vector<observer_problem> invented;   ///< a leader no candidate was
    std::vector<observer_problem> eventual;   ///< the end of the run not reported

    [[nodiscard]] auto ok() const noexcept -> bool {
        return decreases.empty() && invented.empty() && eventual.empty();
    }
};

/// The checks of one observer's reports, against every leadership the candidates recorded
/// (valid or not, killed ones made up by killed_lead) and the campaigns called ("campaign"
/// marks: worker, and `at_ns` the call):
/// - terms never decrease: every leader reported has a term at least the highest reported
///   before (a "none" in between changes nothing);
/// - no invented leader: a reported term T belongs to a leadership of the candidate its value
///   names, whose campaign was called before the report; or, when no candidate recorded term
///   T, that candidate had called a campaign before the report (an attempt of it may have
///   stored its proposal on a majority with its fencing confirm and then given the lock up,
///   its validity spent);
/// - eventual delivery: with `stretch`, if a valid leadership spans it, the last report made
///   by its end names that leadership's term, and the last report of all says no leader and
///   came after it; in any case the last report says no leader.
[[nodiscard]] auto check_observer(const std::vector<seen_record>& seen,
                                  const std::vector<lead_record>& leads,
                                  const std::vector<mark_record>& campaign_calls,
                                  const std::optional<final_stretch>& stretch) -> observer_report;

[[nodiscard]] auto describe_observer_problems(const observer_report& report, std::int64_t origin_ns,
                                              std::size_t limit) -> std::string;

}  // namespace redlock_torture
