// redlock_load's results: one mode's totals as JSON, and the human summary.
#pragma once

#include "load/phase.hpp"
#include "load/runner.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace redlock::bench {

/// The name of a wait mode, as configs spell it ("targeted", ...).
[[nodiscard]] auto wait_mode_name(wait_mode w) -> const char*;

/// What one mode measured across its repetitions. Contended runs add the
/// figures of the hand-off: bound_share (grants/s over 1000 / hold_ms, times
/// the permits of a semaphore), handoff_ns (a release() call to the next
/// grant), held_ns (a grant to its holder's release() call: the hold as
/// slept), handoffs_per_lock and jain (over the grants of each worker). `per_node`:
/// each node of the stats config (named by `node_names`), its commands, their share
/// of all nodes' commands, and its CPU per lock.
[[nodiscard]] auto mode_json(const mode_totals& t, const workload& load,
                             const std::vector<std::string>& node_names) -> nlohmann::ordered_json;

/// One line per mode on stdout (two for contended runs).
void print_summary(const mode_totals& t, const nlohmann::ordered_json& r, const std::string& label,
                   int concurrency, bool contended);

}  // namespace redlock::bench
