#pragma once

// The safety checks of the torture test, on the records the workers wrote.

#include "record.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace redlock_torture {

/// Two holders of one resource whose believed-valid intervals intersect:
/// `later` started while `earlier` still believed its lock valid.
struct overlap {
    hold_record earlier;
    hold_record later;
    std::int64_t overlap_ns = 0;
};

/// `later` acquired after `earlier` (both valid when acquired), with a token that is
/// not larger.
struct inversion {
    hold_record earlier;
    hold_record later;
};

struct check_report {
    std::size_t holds = 0;        ///< records checked
    std::size_t never_valid = 0;  ///< acquired, but valid() was already false right after
    std::map<std::string, std::size_t> holds_per_resource;
    std::vector<overlap> overlaps;
    std::vector<inversion> inversions;

    [[nodiscard]] auto ok() const noexcept -> bool {
        return overlaps.empty() && inversions.empty();
    }
};

/// Per resource, over the holds whose lock was valid right after acquire():
/// - no overlap: no two intervals [start, min(end, valid_until)] intersect;
/// - fencing: ordered by start (the moment acquire() returned), tokens strictly increase.
///
/// Holds that were never valid (the validity had already ended when acquire()
/// returned) are counted and otherwise left out: the holder never believed it held the
/// lock, and its start no longer orders it among the others.
[[nodiscard]] auto check_holds(const std::vector<hold_record>& holds) -> check_report;

}  // namespace redlock_torture
