#pragma once

// A worker process for the torture tests: started with posix_spawn, its standard input a
// pipe (closing it tells the worker to stop), its output appended to a log file.

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <spawn.h>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace redlock_torture {

/// posix_spawn of `argv[0]` (a path) with `argv`, the file actions given, the current
/// environment, an empty signal mask and `default_signals` reset to their default
/// disposition: what this process ignores or blocks is no business of the child's.
/// Returns 0 and sets `pid`, or posix_spawn's error number.
[[nodiscard]] auto spawn(const std::vector<std::string>& argv,
                         const posix_spawn_file_actions_t& actions,
                         std::initializer_list<int> default_signals, pid_t& pid) -> int;

class child_process {
public:
    /// Starts `argv[0]` (a path) with `argv`; stdout and stderr go to `log`. Throws
    /// std::runtime_error when it cannot be started.
    child_process(const std::vector<std::string>& argv, const std::filesystem::path& log);
    child_process(child_process&& other) noexcept;
    /// Kills and reaps this one (if it runs), then takes `other`'s place.
    auto operator=(child_process&& other) noexcept -> child_process&;
    child_process(const child_process&) = delete;
    auto operator=(const child_process&) -> child_process& = delete;
    /// Kills (SIGKILL) and reaps it if it still runs.
    ~child_process();

    /// Closes its standard input: the worker finishes what it holds and exits.
    void close_stdin() noexcept;
    /// Writes `bytes` to its standard input; false if they could not all be written (it has
    /// gone: EPIPE, with SIGPIPE blocked for the call).
    auto send(std::string_view bytes) noexcept -> bool;
    /// True once it has exited (reaps it without blocking).
    [[nodiscard]] auto exited() -> bool;
    /// Waits up to `timeout` for it to exit.
    [[nodiscard]] auto wait_for(std::chrono::milliseconds timeout) -> bool;
    /// SIGKILL and reap.
    void kill() noexcept;

    [[nodiscard]] auto pid() const noexcept -> pid_t { return pid_; }
    /// waitpid's status; meaningful once exited().
    [[nodiscard]] auto status() const noexcept -> int { return status_; }
    [[nodiscard]] auto exited_cleanly() const noexcept -> bool;
    /// "exited with status N" / "was killed by signal N (Broken pipe)" / "is running".
    [[nodiscard]] auto describe() const -> std::string;
    [[nodiscard]] auto log() const -> const std::filesystem::path& { return log_; }

private:
    pid_t pid_ = -1;
    int stdin_fd_ = -1;
    int status_ = 0;
    bool reaped_ = false;
    std::filesystem::path log_;
};

}  // namespace redlock_torture
