#pragma once

// The safety checks of the torture test's election workload, on the records the candidates
// wrote (election_record.hpp). Every record belongs to one election.

#include "election_record.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace redlock_torture {

/// Two leaderships whose believed-valid intervals meet: `later` began while `earlier` still
/// believed it led.
struct lead_overlap {
    lead_record earlier;
    lead_record later;
    std::int64_t overlap_ns = 0;
};

/// `later` began after `earlier` with a term that is not larger.
struct term_inversion {
    lead_record earlier;
    lead_record later;
};

/// A write that breaks a rule: one whose term its candidate never led with, one made outside
/// its leadership though not marked late, a leader's write that the fenced store refused, or
/// a stale write (late, or outside its leadership) that it accepted after a newer leader wrote.
struct write_problem {
    write_record write;
    std::string why;
    std::optional<lead_record> lead;  ///< the leadership with its candidate and term, if any
};

struct election_report {
    std::size_t leaderships = 0;  ///< lead records
    std::size_t never_valid = 0;  ///< of those, invalid already when campaign() returned
    std::map<std::string, std::size_t> ends;  ///< valid leaderships by lead_end_name()
    std::uint64_t lowest_term = 0;
    std::uint64_t highest_term = 0;
    /// Successive valid leaderships (by start) where the first was abandoned or lost: the next
    /// leader took over once the first one's lock expired. The rest were handed over by a
    /// resignation.
    std::size_t failovers_by_expiry = 0;
    std::size_t handovers_by_resignation = 0;
    std::int64_t longest_expiry_gap_ns = 0;  ///< from a believed end to the successor's start
    std::int64_t longest_resign_gap_ns = 0;
    /// Leaderships SIGKILLed in office (not while stepping down), and the next leadership after
    /// each: its start minus the killed one's validity end (the latest valid_until it saw).
    std::size_t killed_in_office = 0;
    std::size_t failovers_after_kill = 0;
    std::int64_t shortest_kill_gap_ns = 0;
    std::int64_t longest_kill_gap_ns = 0;

    std::size_t writes = 0;
    std::size_t late_writes = 0;     ///< marked late by their candidate
    std::size_t accepted = 0;        ///< by the replayed fenced store
    std::size_t stale_writes = 0;    ///< late, or made outside their leadership's validity
    std::size_t stale_rejected = 0;  ///< of those, refused by the store
    /// Of those, accepted because no newer leader had written yet (the store cannot know).
    std::size_t stale_unopposed = 0;

    std::vector<lead_overlap> overlaps;
    std::vector<term_inversion> inversions;
    std::vector<write_problem> write_problems;
    /// A leadership that began before the validity of the killed one before it had ended
    /// (`overlap_ns`: how much before).
    std::vector<lead_overlap> early_successors;

    [[nodiscard]] auto ok() const noexcept -> bool {
        return overlaps.empty() && inversions.empty() && write_problems.empty() &&
               early_successors.empty();
    }
};

/// Over the leaderships that were valid when campaign() returned, each believed valid over
/// [start, min(end, valid_until)):
/// - no two overlap;
/// - ordered by start, terms strictly increase;
/// - every write carries the term of a leadership of its own candidate, and one not marked
///   late was made within that leadership's believed validity (the leader stops writing when
///   its leadership is lost or no longer valid);
/// - a fenced store replayed over every write in time order, accepting a write whose term is
///   at least the highest it accepted, accepts every write made within its leadership's
///   validity, and refuses every stale write (late, or outside its leadership) once a leader
///   whose leadership began after that write's leadership has written.
/// - a leadership killed in office (lead_end::killed, not stepping_down) lasts, for the next
///   leadership, until its validity end: the next one starts no earlier (its lock lives on the
///   nodes that long, and nobody else can win it before).
/// Leaderships never valid are counted and left out of the first two rules and the last.
[[nodiscard]] auto check_election(const std::vector<lead_record>& leads,
                                  const std::vector<write_record>& writes) -> election_report;

/// The first `limit` problems of each sort, one paragraph each, times in ms since `origin_ns`;
/// empty when the report is ok().
[[nodiscard]] auto describe_election_problems(const election_report& report, std::int64_t origin_ns,
                                              std::size_t limit) -> std::string;

}  // namespace redlock_torture
