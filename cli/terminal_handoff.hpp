#pragma once

#include <sys/types.h>

namespace redlock::cli {

class child_process;

/// Makes `group` the foreground process group of the terminal `fd`, with
/// SIGTTOU blocked meanwhile: a background caller (redlock once CMD's group
/// has the terminal) would otherwise be stopped by it. Async-signal-safe: the
/// child calls it between fork and exec.
void hand_terminal(int fd, pid_t group) noexcept;

/// The terminal `redlock run` was started in the foreground of, which CMD's
/// group gets while it runs, as a shell gives it to a job: CMD reads it, and
/// ^C and ^Z reach CMD's group. When CMD stops (^Z), redlock stops too, so
/// that the shell sees the job stop; `fg` continues both.
class terminal_handoff {
public:
    /// The first of stdin, stdout and stderr that is redlock's controlling
    /// terminal; none otherwise.
    [[nodiscard]] static auto find() noexcept -> terminal_handoff;

    /// The terminal to hand to CMD's group now: redlock's controlling terminal
    /// when redlock's group is in its foreground, else -1 (no terminal, or
    /// started in the background: CMD's group then stays in the background).
    [[nodiscard]] auto foreground_fd() const noexcept -> int;

    /// CMD stopped by `sig` (SIGTSTP, SIGTTIN or SIGTTOU): redlock takes the
    /// terminal back and stops by the same signal; once continued, it gives
    /// the terminal to CMD's group again if redlock is in the foreground
    /// (`fg`, not `bg`), and continues that group. Renewals pause while
    /// redlock is stopped: a long stop loses the lock, and CMD is then ended
    /// as for any loss.
    void stop_with(const child_process& child, int sig) const noexcept;

    /// Gives the terminal back to redlock's group if CMD's group (`group`)
    /// has it, as after CMD has ended; else leaves it to whoever has it.
    void take_back(pid_t group) const noexcept;

private:
    explicit terminal_handoff(int fd) noexcept : fd_{fd} {}

    int fd_ = -1;
};

/// True for the signals by which a terminal stops a job.
[[nodiscard]] auto is_terminal_stop(int sig) noexcept -> bool;

}  // namespace redlock::cli
