#include "group_guardian.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace redlock::cli {
namespace {

constexpr char dismissed = 'd';

/// The guardian's side, after fork: async-signal-safe calls only (redlock has
/// other threads).
[[noreturn]] void guard(pid_t group, int watched) noexcept {
    // Nothing but SIGKILL stops it: ^C to redlock's group, a forwarded SIGTERM.
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    // No other descriptor is kept: a pipe redlock's caller reads to its end
    // must not stay open because of the guardian.
    if (watched > 0) close_range(0, static_cast<unsigned>(watched) - 1, 0);
    close_range(static_cast<unsigned>(watched) + 1, ~0U, 0);
    char what = 0;
    ssize_t got = 0;
    do {
        got = read(watched, &what, 1);
    } while (got < 0 && errno == EINTR);
    if (got != 1 || what != dismissed) kill(-group, SIGKILL);  // redlock is gone
    _exit(0);
}

}  // namespace

auto group_guardian::start(pid_t group) -> result<group_guardian, int> {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) return failure{errno};
    const pid_t pid = fork();
    if (pid < 0) {
        const int err = errno;
        close(ends[0]);
        close(ends[1]);
        return failure{err};
    }
    if (pid == 0) guard(group, ends[0]);
    close(ends[0]);
    return group_guardian{pid, ends[1]};
}

group_guardian::~group_guardian() {
    if (pipe_ >= 0) {
        ssize_t ignored = write(pipe_, &dismissed, 1);
        (void)ignored;
        close(pipe_);
    }
    if (pid_ > 0) {
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
}

}  // namespace redlock::cli
