#pragma once

// The command lines of the CLI stress test: one `redlock run` per invocation, of one of
// three kinds. A writer runs `redlock run --fence`, a reader `redlock run --shared --fence`
// on the same resource, and a permit `redlock run --permits K` on a resource of its own
// (a semaphore has no fencing token). The elect loops' invocations run `redlock elect` in an
// election of their own, the leader's section recording its term. And the cluster
// configuration the invocations read, and the copies of the binaries they run.

#include "record.hpp"
#include "support/fault_proxy.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace redlock_torture {

/// Whether invocations mix the three kinds (writers, readers with `--shared`, permits with
/// `--permits`) when REDLOCK_CLI_STRESS_KINDS is not set; REDLOCK_CLI_STRESS_KINDS=0 runs
/// writers only, as before the lock kinds.
inline constexpr bool mix_kinds_by_default = true;

/// K of the permit invocations' semaphore.
inline constexpr int cli_stress_permits = 2;

/// The binaries every invocation runs: copies taken at the start (cli_stress_test.cpp),
/// so that a rebuild of the tree while the test runs neither fails invocations (ETXTBSY, a
/// half-written file) nor mixes two versions of `redlock` in one run.
struct binaries {
    std::filesystem::path cli;
    std::filesystem::path section;
};

/// Copies of `from` (the tree's `redlock` and section program) into `dir`, taken at the start.
[[nodiscard]] auto snapshot(const binaries& from, const std::filesystem::path& dir) -> binaries;

/// The cluster configuration of the invocations: a node per proxy, lock.ttl_ms `ttl_ms`.
/// request_timeout_ms 100: the 150-250 ms per direction of a slowed node is a failure,
/// not just a slow answer. `wait_mode` (the lock's default): empty for the library's.
[[nodiscard]] auto config_json(const std::vector<redlock_test::fault_proxy>& proxies, int ttl_ms,
                               const std::string& wait_mode = {}) -> std::string;

/// The election the elect loops campaign in: a lock name of its own, apart from the run
/// invocations' resources (README: do not lock an election's name otherwise).
inline const std::string cli_stress_election = "cli-stress-elect";

struct invocation_plan {
    int id = 0;
    int duration_ms = 1;  ///< of the section
    int wait_ms = 0;      ///< --wait-ms
    int ttl_ms = 0;       ///< --ttl-ms
    hold_kind kind = hold_kind::writer;
    bool fair = false;  ///< --fair: the fair wait mode (else the config's)
};

/// `redlock run` for `plan`, on `resource` (a permit: on `resource` + "-pool"), running
/// the section with its record going to `sections`.
[[nodiscard]] auto invocation_argv(const binaries& bin, const std::filesystem::path& config,
                                   const std::filesystem::path& sections,
                                   const std::string& resource, const invocation_plan& plan)
    -> std::vector<std::string>;

/// `redlock elect --name <election> --ttl-ms T --wait-ms W` for `plan` (its kind is not
/// read), running the section as a "leader", with its record going to `sections`. W must
/// be above 0: `elect --wait-ms 0` waits without end.
[[nodiscard]] auto elect_argv(const binaries& bin, const std::filesystem::path& config,
                              const std::filesystem::path& sections, const std::string& election,
                              const invocation_plan& plan) -> std::vector<std::string>;

/// The kind of a mixed invocation, from a draw uniform in 0..3: half are writers (the
/// kind every invocation is without mixing), a quarter readers, a quarter permits.
[[nodiscard]] auto kind_of_draw(int draw) noexcept -> hold_kind;

}  // namespace redlock_torture
