#pragma once

// The command lines of the CLI stress test: one `redlock run` per invocation, of one of
// three kinds. A writer runs `redlock run --fence`, a reader `redlock run --shared --fence`
// on the same resource, and a permit `redlock run --permits K` on a resource of its own
// (a semaphore has no fencing token).

#include "record.hpp"

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

/// The kind of a mixed invocation, from a draw uniform in 0..3: half are writers (the
/// kind every invocation is without mixing), a quarter readers, a quarter permits.
[[nodiscard]] auto kind_of_draw(int draw) noexcept -> hold_kind;

}  // namespace redlock_torture
