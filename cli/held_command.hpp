#pragma once

// What `run` and `elect` do once they hold their lock: CMD started in its own
// process group (with the terminal and a guard), supervised by run_supervisor
// until it ends (ended early as run_timeline decides when the lock is being
// lost), then the lock let go and the outcome reported, with run's exit codes.

#include "child_process.hpp"
#include "options.hpp"
#include "output.hpp"
#include "run_supervisor.hpp"

#include <redlock/redlock.hpp>

#include <csignal>
#include <functional>
#include <string>
#include <vector>

namespace redlock::cli {

/// What differs between run and elect.
struct held_command {
    const lock& held;
    child_process::environment environment;
    /// "acquired ... " or "leading ...": what -v says once CMD has started.
    std::string started;
    /// Lets go of the lock after CMD (run: release; elect: resign).
    std::function<result<release_report>()> let_go;
    /// Added to the JSON result.
    json extra;
    /// What was lost, in "lost <this> while CMD ran": "the lock on 'R'".
    std::string lost_phrase;
};

/// Runs run.command while `what.held` is held; returns the exit code.
[[nodiscard]] auto run_while_held(client& locks, const run_options& run, const sigset_t& ignored,
                                  const reporter& out, loop_news& news, held_command what) -> int;

/// "HOST:PID (CMD)": the library's default holder text, with the command's name
/// for the program's (every run is "redlock" otherwise).
[[nodiscard]] auto default_run_holder(const std::vector<std::string>& command) -> std::string;

/// The signals CMD gets the default disposition of: those we block or ignore
/// ourselves, except what the invoker ignored, which CMD keeps ignoring.
[[nodiscard]] auto signals_to_reset(const sigset_t& ignored) -> sigset_t;

}  // namespace redlock::cli
