#include "terminal_handoff.hpp"

#include "child_process.hpp"

#include <csignal>
#include <termios.h>
#include <unistd.h>

namespace redlock::cli {

void hand_terminal(int fd, pid_t group) noexcept {
    sigset_t ttou;
    sigset_t before;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    // sigprocmask: the child between fork and exec is single-threaded, and in
    // redlock the main thread alone calls this.
    sigprocmask(SIG_BLOCK, &ttou, &before);
    tcsetpgrp(fd, group);
    sigprocmask(SIG_SETMASK, &before, nullptr);
}

auto terminal_handoff::find() noexcept -> terminal_handoff {
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
        // tcgetpgrp fails unless fd is our controlling terminal.
        if (isatty(fd) == 1 && tcgetpgrp(fd) > 0) return terminal_handoff{fd};
    }
    return terminal_handoff{-1};
}

auto terminal_handoff::foreground_fd() const noexcept -> int {
    return fd_ >= 0 && tcgetpgrp(fd_) == getpgrp() ? fd_ : -1;
}

void terminal_handoff::stop_with(const child_process& child, int sig) const noexcept {
    take_back(child.group());
    // Stops this thread's process before raise returns; a stop signal in an
    // orphaned group is discarded, and then CMD is simply continued.
    raise(sig);
    if (const int fd = foreground_fd(); fd >= 0) hand_terminal(fd, child.group());
    child.signal(SIGCONT);
}

void terminal_handoff::take_back(pid_t group) const noexcept {
    if (fd_ >= 0 && group > 0 && tcgetpgrp(fd_) == group) hand_terminal(fd_, getpgrp());
}

auto is_terminal_stop(int sig) noexcept -> bool {
    return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

}  // namespace redlock::cli
