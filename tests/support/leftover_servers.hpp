#pragma once

#include <csignal>
#include <sys/types.h>

namespace redlock_test {

// Leftover servers. Every live server's pid sits in a fixed table of lock-free atomics, so that
// an atexit handler and a fatal-signal handler (async-signal-safe: only atomics, kill, sigaction
// and raise) can kill the process groups of servers a dying test process did not get to stop.

/// SIGKILL to the process group of `pid` (or to `pid` alone when it has none).
void kill_group(pid_t pid) noexcept;
/// Registers a live server; throws std::runtime_error (after killing it) when the
/// table of 512 is full.
void remember(pid_t pid);
/// Unregisters it: call before reaping, when the pid can no longer be reused.
void forget(pid_t pid) noexcept;
/// (Re)installs the atexit and fatal-signal handlers that kill every registered
/// server, in front of whatever handlers are current, chaining to them. doctest
/// installs its own around every test case, so call this each time a server starts.
void install_handlers();

/// Blocks every signal on this thread for its lifetime, so that a fatal signal cannot
/// land between spawning a server and registering its pid.
class signals_blocked {
public:
    signals_blocked() {
        sigset_t all;
        sigfillset(&all);
        ::pthread_sigmask(SIG_SETMASK, &all, &saved_);
    }
    ~signals_blocked() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
    signals_blocked(const signals_blocked&) = delete;
    auto operator=(const signals_blocked&) -> signals_blocked& = delete;

private:
    sigset_t saved_{};
};

}  // namespace redlock_test
