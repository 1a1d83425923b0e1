#include "support/leftover_servers.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <sys/wait.h>

namespace redlock_test {
namespace {

constexpr std::size_t max_servers = 512;
std::array<std::atomic<pid_t>, max_servers> live_servers{};
static_assert(std::atomic<pid_t>::is_always_lock_free);

void kill_leftovers() noexcept {
    for (auto& slot : live_servers) {
        if (pid_t pid = slot.exchange(0); pid > 0) kill_group(pid);
    }
}

constexpr std::array fatal_signals{SIGINT,  SIGTERM, SIGHUP, SIGQUIT, SIGABRT,
                                   SIGSEGV, SIGBUS,  SIGFPE, SIGILL};
std::array<struct sigaction, fatal_signals.size()> chained_actions{};

void on_fatal_signal(int signal_number) {
    kill_leftovers();
    for (std::size_t i = 0; i < fatal_signals.size(); ++i) {
        if (fatal_signals[i] == signal_number)
            ::sigaction(signal_number, &chained_actions[i], nullptr);
    }
    ::raise(signal_number);  // delivered on return, to whatever handled it before us
}

}  // namespace

void kill_group(pid_t pid) noexcept {
    if (::kill(-pid, SIGKILL) != 0) ::kill(pid, SIGKILL);
}

void remember(pid_t pid) {
    for (auto& slot : live_servers) {
        pid_t empty = 0;
        if (slot.compare_exchange_strong(empty, pid)) return;
    }
    kill_group(pid);
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("redlock_test: more than 512 redis-server processes at once");
}

void forget(pid_t pid) noexcept {
    for (auto& slot : live_servers) {
        pid_t expected = pid;
        if (slot.compare_exchange_strong(expected, 0)) return;
    }
}

void install_handlers() {
    static const bool registered = [] { return std::atexit(kill_leftovers) == 0; }();
    (void)registered;
    for (std::size_t i = 0; i < fatal_signals.size(); ++i) {
        struct sigaction current {};
        ::sigaction(fatal_signals[i], nullptr, &current);
        if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == &on_fatal_signal)
            continue;
        if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_IGN) continue;
        struct sigaction ours {};
        ours.sa_handler = &on_fatal_signal;
        ours.sa_flags = SA_ONSTACK;
        sigemptyset(&ours.sa_mask);
        chained_actions[i] = current;
        ::sigaction(fatal_signals[i], &ours, nullptr);
    }
}

}  // namespace redlock_test
