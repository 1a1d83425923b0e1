#pragma once

// One `redlock` invocation of the CLI stress test: a process started with posix_spawn,
// waited for with a bound, its stderr kept in a file for when its outcome is unexpected.
// Safe to call from several threads at once (each with its own stderr file).

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace redlock_torture {

struct invocation_outcome {
    int exit_code = -1;       ///< WEXITSTATUS, when it exited
    int signal = 0;           ///< WTERMSIG, when a signal killed it (not ours: see `hung`)
    bool hung = false;        ///< still running at the bound: we SIGKILLed it
    std::string spawn_error;  ///< not empty: it could not be started at all
    std::chrono::nanoseconds took{0};

    /// "exit 75", "signal 6 (Aborted)", "hung", "spawn failed: ...".
    [[nodiscard]] auto describe() const -> std::string;
};

/// Runs `argv` (argv[0] a path) with stdin and stdout on /dev/null and stderr truncated
/// into `stderr_file`, in this process's group, with every signal's default disposition
/// and an empty mask. Waits at most `bound` for it (a pidfd, not a polling loop); past
/// that it is SIGKILLed, reaped, and reported as hung.
/// The first `limit` characters of `file` (an invocation's stderr), "..." after them if
/// there are more.
[[nodiscard]] auto slurp(const std::filesystem::path& file, std::size_t limit = 4000)
    -> std::string;

[[nodiscard]] auto invoke(const std::vector<std::string>& argv,
                          const std::filesystem::path& stderr_file, std::chrono::milliseconds bound)
    -> invocation_outcome;

}  // namespace redlock_torture
