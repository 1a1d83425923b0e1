// The report's markdown tables of load runs and micro benchmarks, each built from `results`.
#pragma once

#include "report_input.hpp"

#include <string>
#include <utility>

namespace redlock::bench {

/// The command that measured run `label`, as inline code (without --label and
/// --json); "–" if there is no such run.
[[nodiscard]] auto command_of(const results& r, const std::string& label) -> std::string;

/// The library's best throughput in the main matrix, and the concurrency it was reached at.
[[nodiscard]] auto best_lib_throughput(const results& r) -> std::pair<double, int>;

/// The targets of issue 4: goal, measurement, verdict and the command that reproduces it.
[[nodiscard]] auto targets_table(const results& r) -> std::string;
/// Library beside raw by locks in flight: throughput and latency percentiles.
[[nodiscard]] auto uncontended_table(const results& r) -> std::string;
/// Library beside raw by locks in flight: CPU, allocations, writes and commands per lock.
[[nodiscard]] auto costs_table(const results& r) -> std::string;
/// hiredis async + libuv (the peer) by locks in flight, beside the library.
[[nodiscard]] auto peer_table(const results& r) -> std::string;
/// The plain, fencing and extend cycles at 1 and 64 in flight.
[[nodiscard]] auto variants_table(const results& r) -> std::string;
/// 3, 5 and 7 nodes at 1 and 64 in flight.
[[nodiscard]] auto nodes_table(const results& r) -> std::string;
/// The contended runs (workers on one resource), by workers and waiting policy.
[[nodiscard]] auto contended_table(const results& r) -> std::string;
/// Client memory (RSS and heap) idle and at 1024 in flight.
[[nodiscard]] auto client_memory_table(const results& r) -> std::string;
/// The micro benchmarks' median CPU time and allocations per operation.
[[nodiscard]] auto micro_table(const results& r) -> std::string;
/// Every error of every run as a markdown list (a contended run's give-ups are not errors).
[[nodiscard]] auto errors_list(const results& r) -> std::string;
/// The commands the library sent per lock, for each cycle.
[[nodiscard]] auto commands_table(const results& r) -> std::string;

}  // namespace redlock::bench
