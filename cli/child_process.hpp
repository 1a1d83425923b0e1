#pragma once

#include <redlock/result.hpp>

#include <csignal>
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

/// The command `redlock run` runs. Move-only; the destructor SIGKILLs and reaps
/// a child that has not been reaped yet, so that no exit path leaves one behind.
class child_process {
public:
    /// Variables to set (a value) or to remove (nullopt) in the child's environment.
    using environment = std::vector<std::pair<std::string, std::optional<std::string>>>;

    /// Starts argv[0], searched in PATH, in redlock's process group, with this
    /// process's environment changed by `env`,
    /// an empty signal mask, and the default disposition of every signal in
    /// `reset`; killed (SIGKILL) when redlock dies. Fails with the errno of
    /// the exec (ENOENT: not found, EACCES: not executable) or of fork.
    [[nodiscard]] static auto spawn(const std::vector<std::string>& argv, const environment& env,
                                    const sigset_t& reset) -> result<child_process, int>;

    child_process(child_process&& other) noexcept : pid_{std::exchange(other.pid_, -1)} {}
    auto operator=(child_process&& other) noexcept -> child_process&;
    child_process(const child_process&) = delete;
    auto operator=(const child_process&) -> child_process& = delete;
    ~child_process();

    [[nodiscard]] auto pid() const noexcept -> pid_t { return pid_; }
    /// Sends `sig` to the child (not to its own children). No-op once reaped.
    void signal(int sig) const noexcept;
    /// Reaps the child if it has ended; never blocks.
    [[nodiscard]] auto try_reap() -> std::optional<child_exit>;

private:
    explicit child_process(pid_t pid) noexcept : pid_{pid} {}
    void kill_and_reap() noexcept;

    pid_t pid_ = -1;
};

}  // namespace redlock::cli
