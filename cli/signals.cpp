#include "signals.hpp"

#include <cerrno>
#include <ctime>
#include <pthread.h>
#include <string.h>  // sigabbrev_np
#include <unistd.h>

namespace redlock::cli {

auto run_signals() -> sigset_t {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1}) sigaddset(&set, sig);
    return set;
}

auto ignored_at_start() -> sigset_t {
    sigset_t ignored;
    sigemptyset(&ignored);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
        struct sigaction current {};
        if (sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN)
            sigaddset(&ignored, sig);
    }
    return ignored;
}

void block_run_signals() {
    const sigset_t set = run_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::signal(SIGCHLD, SIG_DFL);
}

void wake_main_thread() noexcept {
    // Process-directed: every thread blocks SIGUSR1, so it stays pending until
    // the main thread's sigtimedwait takes it.
    kill(getpid(), SIGUSR1);
}

auto next_signal(std::chrono::milliseconds timeout) -> std::optional<siginfo_t> {
    const sigset_t set = run_signals();
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    const timespec wait{static_cast<time_t>(seconds.count()),
                        static_cast<long>(std::chrono::nanoseconds{timeout - seconds}.count())};
    siginfo_t info{};
    for (;;) {
        if (sigtimedwait(&set, &info, &wait) >= 0) return info;
        if (errno != EINTR) return std::nullopt;  // EAGAIN: the time is up
    }
}

auto sent_by_process(const siginfo_t& info) noexcept -> bool {
    // SI_USER (kill), SI_QUEUE (sigqueue) and SI_TKILL are all <= 0; the
    // kernel's own codes (SI_KERNEL for a terminal's ^C) are positive.
    return info.si_code <= 0;
}

auto signal_name(int sig) -> std::string {
    if (const char* abbrev = sigabbrev_np(sig)) return std::string{"SIG"} + abbrev;
    return "signal " + std::to_string(sig);
}

}  // namespace redlock::cli
