#pragma once

#include "options.hpp"
#include "output.hpp"

#include <csignal>
#include <string>

namespace redlock::cli {

// One function per subcommand. Each reports through `out` and returns the
// process's exit code (see exit_codes.hpp).

/// Hold a lock while a command runs. Expects run_signals() to be blocked in
/// the calling (main) thread already; `ignored` is ignored_at_start().
[[nodiscard]] auto run_command(const global_options& global, const run_options& run,
                               const sigset_t& ignored, const reporter& out) -> int;
[[nodiscard]] auto acquire_command(const global_options& global, const lock_flags& flags,
                                   const reporter& out) -> int;
[[nodiscard]] auto release_command(const global_options& global, const value_options& args,
                                   const reporter& out) -> int;
[[nodiscard]] auto extend_command(const global_options& global, const value_options& args,
                                  const reporter& out) -> int;
/// A lock's writer and readers.
[[nodiscard]] auto status_command(const global_options& global, const status_options& args,
                                  const reporter& out) -> int;
/// A semaphore's permit holders (status --permits K).
[[nodiscard]] auto semaphore_status_command(const global_options& global,
                                            const status_options& args, const reporter& out) -> int;
[[nodiscard]] auto check_command(const global_options& global, const check_options& args,
                                 const reporter& out) -> int;
/// The operators' tools (operator_commands.cpp).
[[nodiscard]] auto break_command(const global_options& global, const break_options& args,
                                 const reporter& out) -> int;
[[nodiscard]] auto audit_command(const global_options& global, const audit_options& args,
                                 const reporter& out) -> int;
[[nodiscard]] auto check_fence_command(const global_options& global, const fence_options& args,
                                       const reporter& out) -> int;
/// The locks a majority hold, and the leftovers (list_command.cpp).
[[nodiscard]] auto list_command(const global_options& global, const list_flags& args,
                                const reporter& out) -> int;
/// Leader election (elect_command.cpp, leader_command.cpp). elect expects
/// run_signals() blocked, as run does; leader --watch too.
[[nodiscard]] auto elect_command(const global_options& global, const elect_options& elect,
                                 const sigset_t& ignored, const reporter& out) -> int;
[[nodiscard]] auto leader_command(const global_options& global, const leader_flags& args,
                                  const reporter& out) -> int;

}  // namespace redlock::cli
