#pragma once

#include <redlock/result.hpp>

#include <csignal>
#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace redlock::cli {

/// How CMD ended.
struct child_exit {
    int code = 0;    ///< exit code, when it exited
    int signal = 0;  ///< the signal that killed it, or 0

    /// The shell's $?: the exit code, or 128 + the signal.
    [[nodiscard]] auto status() const noexcept -> int { return signal != 0 ? 128 + signal : code; }
};

/// What became of CMD since the last look.
struct child_state {
    std::optional<child_exit> ended;  ///< it exited (and is reaped)
    int stopped_by = 0;               ///< it stopped, by this signal (^Z: SIGTSTP); else 0
};

/// Where CMD runs.
struct spawn_options {
    /// CMD leads a process group of its own, and every signal goes to that
    /// group: what CMD starts itself is ended with it. false: CMD stays in
    /// redlock's group and only its pid is signalled (--pid-only).
    bool own_group = true;
    /// With own_group: the terminal redlock runs in the foreground of, or -1.
    /// CMD's group is made its foreground, so that CMD reads it and gets ^C.
    int terminal = -1;
    /// Run in redlock with CMD's pid once its group exists, before CMD may exec:
    /// CMD waits for it (what it sets up, the group's guardian, is in place
    /// before anything of CMD runs). Empty: CMD execs at once.
    std::function<void(pid_t)> before_exec;
};

/// The command `redlock run` runs. Move-only; the destructor SIGKILLs and reaps
/// a child that has not been reaped yet (and its group), so that no exit path
/// leaves one behind.
class child_process {
public:
    /// Variables to set (a value) or to remove (nullopt) in the child's environment.
    using environment = std::vector<std::pair<std::string, std::optional<std::string>>>;

    /// Starts argv[0], searched in PATH, as `where` says, with this process's
    /// environment changed by `env`, an empty signal mask, and the default
    /// disposition of every signal in `reset`; killed (SIGKILL) when redlock
    /// dies. Fails with the errno of the exec (ENOENT: not found, EACCES: not
    /// executable) or of fork.
    [[nodiscard]] static auto spawn(const std::vector<std::string>& argv, const environment& env,
                                    const sigset_t& reset, const spawn_options& where)
        -> result<child_process, int>;

    child_process(child_process&& other) noexcept
        : pid_{std::exchange(other.pid_, -1)}, group_{std::exchange(other.group_, 0)} {}
    auto operator=(child_process&& other) noexcept -> child_process&;
    child_process(const child_process&) = delete;
    auto operator=(const child_process&) -> child_process& = delete;
    ~child_process();

    [[nodiscard]] auto pid() const noexcept -> pid_t { return pid_; }
    /// CMD's own process group, or 0 when it runs in redlock's (--pid-only).
    [[nodiscard]] auto group() const noexcept -> pid_t { return group_; }
    /// Sends `sig` to CMD's group (to its pid alone with --pid-only). No-op
    /// once there is nobody left to signal.
    void signal(int sig) const noexcept;
    /// True while some process of CMD's own group runs (CMD itself reaped or
    /// not); false with --pid-only. Once CMD is reaped, it reaps the group's
    /// processes that were handed to redlock as their subreaper.
    [[nodiscard]] auto group_alive() noexcept -> bool;
    /// Reaps the child if it has ended, or reports that it stopped; never blocks.
    [[nodiscard]] auto poll() -> child_state;

private:
    child_process(pid_t pid, pid_t group) noexcept : pid_{pid}, group_{group} {}
    void kill_and_reap() noexcept;

    pid_t pid_ = -1;
    pid_t group_ = 0;
};

}  // namespace redlock::cli
