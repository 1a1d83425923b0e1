#pragma once

// The fault schedule of the CLI stress test: the torture test's fault engine
// (injector.hpp) with stricter settings. Its latency is always far above the request
// timeout (so a slowed node fails every request rather than merely slowing it) and on
// one node at a time, every node persists every write (so a crashed node is restarted
// at once and keeps its fence counters: see docs/reliability.md, "Fencing across empty
// restarts"), and even an instantaneous connection drop counts toward the limit on
// faulted nodes: never more than 2 of the 5 at any moment.
//
// The schedule of attempted faults is a function of the seed alone (a fixed number of
// draws per fault); what they hit depends on timing.

#include "injector.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace redlock_torture {

class cli_fault_schedule {
public:
    struct settings {
        std::size_t max_faulted = 2;
        /// Added per direction, on one node at a time: a round trip then takes two of it.
        std::chrono::milliseconds latency_min{150};
        std::chrono::milliseconds latency_max{250};
    };

    /// `log` gets one line per fault, stamped with CLOCK_MONOTONIC ns; may be null.
    cli_fault_schedule(std::vector<redlock_test::redis_server>& nodes,
                       std::vector<redlock_test::fault_proxy>& proxies, settings limits,
                       std::uint64_t seed, std::FILE* log);

    /// Ends the faults that are due and, when it is time, starts the next one. Call it
    /// every few milliseconds from the thread that owns the servers.
    void step() { engine_.step(); }
    /// Ends every fault: thaws, heals every proxy, restarts every crashed node. Throws
    /// std::runtime_error if a node cannot be restarted within a few seconds.
    void heal_all() { engine_.heal_all(); }

    /// Faults started, by kind: kill, freeze, blackhole, latency, drop, reset; "skipped":
    /// ruled out by the limit; "restart_failed": restarts retried (port taken meanwhile).
    [[nodiscard]] auto counts() const -> std::map<std::string, std::uint64_t>;
    /// The most nodes faulted at once, as seen by step(); never above max_faulted.
    [[nodiscard]] auto most_faulted() const noexcept -> std::size_t {
        return engine_.max_impaired();
    }
    /// Sum of the faults started (skips and retries excluded).
    [[nodiscard]] auto injected() const -> std::uint64_t;

private:
    fault_injector engine_;
};

}  // namespace redlock_torture
