#pragma once

// The safety checks of the torture test, on the records the workers wrote.

#include "record.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace redlock_torture {

/// Two holders of one resource that must exclude each other (a writer and any other
/// reader or writer; two holders of the same permit) whose believed-valid intervals
/// intersect: `later` started while `earlier` still believed its lock valid.
struct overlap {
    hold_record earlier;
    hold_record later;
    std::int64_t overlap_ns = 0;
};

/// `later` acquired after `earlier` (both valid when acquired and fenced, `earlier` a writer)
/// with a token that is too low: a writer's not larger than the earlier writer's, or a reader's
/// smaller (a reader gets the current token, at least that of every writer before it).
struct inversion {
    hold_record earlier;
    hold_record later;
};

/// More holders of a semaphore's permits believed valid at one instant than it has
/// permits, found when the count first rose above K.
struct excess {
    std::string resource;
    int permits = 0;                   ///< K: the smallest the resource's records name
    std::int64_t at_ns = 0;            ///< the instant the count rose above K
    std::vector<hold_record> holders;  ///< every holder believed valid at that instant
};

/// A hold whose record names a value no correct library can give: a safety finding of its
/// own, whatever the other holders did (impossible_values).
struct impossible_hold {
    hold_record hold;
    std::string what;  ///< "permit 3 of 2: past K", ...
};

/// What is impossible in `h`, "; "-separated; empty when nothing is:
/// - a permit: K below 1, a permit index past K - 1 or (with `permit_names::required`)
///   below 0, or a fencing token;
/// - a fenced writer with token 0: a writer's token is one more than the highest counter
///   its grants read, so at least 1. (A fenced reader's 0 is possible: it reads the counter
///   as it is, 0 before any writer; a reader's token below an earlier writer's is an
///   inversion.)
/// A semaphore's holder that is granted a permit no majority granted (issue 36: yeses for
/// different permits counted together) is told a permit index, garbage or not: a garbage
/// one past K is caught here even when no other holder overlaps it.
enum class permit_names {
    required,  ///< every permit's holder names its index (the library tells it)
    optional,  ///< -1: not named (a CLI that does not set REDLOCK_PERMIT); counted only
};
[[nodiscard]] auto impossible_values(const hold_record& h,
                                     permit_names names = permit_names::required) -> std::string;

struct check_report {
    std::size_t holds = 0;        ///< records checked
    std::size_t never_valid = 0;  ///< acquired, but valid() was already false right after
    std::map<std::string, std::size_t> holds_per_resource;
    /// The holds that were valid when acquired, by kind_name().
    std::map<std::string, std::size_t> holds_per_kind;
    /// Of those, the writers without a fencing token (the ones a release can hand over to).
    std::size_t unfenced_writers = 0;
    /// Of those, by via_name(): how they were taken (plain, reentrant, in a session).
    std::map<std::string, std::size_t> holds_per_via;
    /// Per resource, the most holders believed valid at one instant: above 1 for
    /// readers that shared, up to K for a semaphore, 1 for a plain lock.
    std::map<std::string, std::size_t> most_at_once;
    std::vector<overlap> overlaps;
    std::vector<inversion> inversions;
    std::vector<excess> excesses;
    /// Holds naming an impossible value (impossible_values), valid at start or not.
    std::vector<impossible_hold> impossibles;

    [[nodiscard]] auto ok() const noexcept -> bool {
        return overlaps.empty() && inversions.empty() && excesses.empty() && impossibles.empty();
    }
};

/// Per resource, over the holds whose lock was valid right after acquire(), each believed
/// valid over [start, min(end, valid_until)):
/// - a writer overlaps no other holder, reader or writer; readers may overlap each other;
/// - at no instant do more permit holders overlap than the semaphore's K, and no two
///   holders of one permit overlap (each permit is an exclusive lock of its own; a
///   permit of -1 is not known, and only counted);
/// - fencing, ordered by start (the moment acquire() returned), among the holds that have a
///   token: writers' tokens strictly increase, and a reader's token is at least that of every
///   fenced writer before it. A writer without a token (hold_record::fenced false) is checked
///   for overlaps like any other, and is left out of the token order only.
///
/// How a hold was taken (hold_record::via) changes none of this: a reentrant lock, from its
/// first acquire to the release of its last hold, and a lock in a session are writers like
/// any other, checked against every holder of their resource.
///
/// Permits live under keys of their own: a resource's permit holders are not checked
/// against its readers and writers (the torture test gives each resource one use).
///
/// Holds that were never valid (the validity had already ended when acquire()
/// returned) are counted and otherwise left out: the holder never believed it held the
/// lock, and its start no longer orders it among the others.
///
/// Every hold, valid or not, is also checked for impossible values (impossible_values):
/// each one found is a safety finding (report.impossibles). Such a hold still takes part
/// in the checks above as what it says it is: a permit past K counts toward K (a holder
/// that believes it holds a permit), and K is the smallest K of 1 or more named.
[[nodiscard]] auto check_holds(const std::vector<hold_record>& holds,
                               permit_names names = permit_names::required) -> check_report;

/// The holds of report.holds_per_via taken `via`: 0 when there were none.
[[nodiscard]] auto holds_via(const check_report& report, hold_via via) -> std::size_t;

/// The first `limit` problems of each sort, one paragraph each ("OVERLAP of 12.5 ms:",
/// "TOKEN INVERSION:", "MORE THAN 2 PERMITS at 1234.5 ms:", "IMPOSSIBLE HOLD (a safety
/// finding): permit 3 of 2: past K", then the holds; an impossible one's record line whole
/// too), times in ms since `origin_ns`; empty when the report is ok().
[[nodiscard]] auto describe_problems(const check_report& report, std::int64_t origin_ns,
                                     std::size_t limit) -> std::string;

}  // namespace redlock_torture
