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

struct check_report {
    std::size_t holds = 0;        ///< records checked
    std::size_t never_valid = 0;  ///< acquired, but valid() was already false right after
    std::map<std::string, std::size_t> holds_per_resource;
    /// The holds that were valid when acquired, by kind_name().
    std::map<std::string, std::size_t> holds_per_kind;
    /// Of those, the writers without a fencing token (the ones a release can hand over to).
    std::size_t unfenced_writers = 0;
    /// Per resource, the most holders believed valid at one instant: above 1 for
    /// readers that shared, up to K for a semaphore, 1 for a plain lock.
    std::map<std::string, std::size_t> most_at_once;
    std::vector<overlap> overlaps;
    std::vector<inversion> inversions;
    std::vector<excess> excesses;

    [[nodiscard]] auto ok() const noexcept -> bool {
        return overlaps.empty() && inversions.empty() && excesses.empty();
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
/// Permits live under keys of their own: a resource's permit holders are not checked
/// against its readers and writers (the torture test gives each resource one use).
///
/// Holds that were never valid (the validity had already ended when acquire()
/// returned) are counted and otherwise left out: the holder never believed it held the
/// lock, and its start no longer orders it among the others.
[[nodiscard]] auto check_holds(const std::vector<hold_record>& holds) -> check_report;

/// The first `limit` problems of each sort, one paragraph each ("OVERLAP of 12.5 ms:",
/// "TOKEN INVERSION:", "MORE THAN 2 PERMITS at 1234.5 ms:", then the holds), times in ms
/// since `origin_ns`; empty when the report is ok().
[[nodiscard]] auto describe_problems(const check_report& report, std::int64_t origin_ns,
                                     std::size_t limit) -> std::string;

}  // namespace redlock_torture
