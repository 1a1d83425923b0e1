// The report's lock-kind figures: readers beside exclusive locks, a read-write
// mix on one resource, and a counting semaphore (runs readers-c64, rw-r16-w2
// and sem-k4-w16 of bench/run.sh).
#pragma once

#include "report_input.hpp"

#include <optional>
#include <string>

namespace redlock::bench {

/// The labels of the lock-kind runs.
inline constexpr const char* readers_run = "readers-c64";
inline constexpr const char* rwlock_run = "rw-r16-w2";
inline constexpr const char* semaphore_run = "sem-k4-w16";

/// The value of a lock-kind placeholder ({{readers}}, {{rwlock}},
/// {{semaphore}}, {{kinds_date}}, {{shared_vs_exclusive}}, ...), or nullopt
/// if `name` is not one.
[[nodiscard]] auto kinds_value(const results& r, const std::string& name)
    -> std::optional<std::string>;

}  // namespace redlock::bench
