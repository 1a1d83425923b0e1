#include "cli/pty_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace redlock_test {

pty_process::pty_process(std::vector<std::string> argv) {
    master_ = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0 || grantpt(master_) != 0 || unlockpt(master_) != 0)
        throw std::runtime_error("cannot open a pseudo-terminal");
    const std::string slave = ptsname(master_);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("cannot fork");
    if (pid_ == 0) {
        // A new session; its first terminal opened becomes its controlling
        // one, with this (the only) process group in the foreground.
        setsid();
        const int tty = open(slave.c_str(), O_RDWR);
        if (tty < 0) _exit(120);
        for (int fd = 0; fd < 3; ++fd) dup2(tty, fd);
        if (tty > 2) close(tty);
        // As a shell starts a foreground job: whatever the test runner was
        // started with (a background job ignores SIGINT), the defaults.
        for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE})
            signal(sig, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
}

pty_process::~pty_process() {
    if (pid_ > 0 && status_ < 0) {
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    if (master_ >= 0) close(master_);
}

void pty_process::type(std::string_view keys) const {
    if (write(master_, keys.data(), keys.size()) != static_cast<ssize_t>(keys.size()))
        throw std::runtime_error("cannot type at the pseudo-terminal");
}

auto pty_process::read_until(std::string_view needle, std::chrono::milliseconds timeout) -> bool {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (screen_.find(needle) == std::string::npos) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        pollfd ready{master_, POLLIN, 0};
        if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0) continue;
        char chunk[512];
        const ssize_t got = read(master_, chunk, sizeof chunk);
        // EIO: no process has the terminal open any more.
        if (got <= 0) return screen_.find(needle) != std::string::npos;
        screen_.append(chunk, static_cast<std::size_t>(got));
    }
    return true;
}

auto pty_process::wait(std::chrono::milliseconds timeout) -> int {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (status_ < 0) {
        int raw = 0;
        if (waitpid(pid_, &raw, WNOHANG) == pid_) {
            status_ = WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : WEXITSTATUS(raw);
            break;
        }
        if (std::chrono::steady_clock::now() >= deadline) return -1;
        // Drains the terminal meanwhile: a full one would block the writer.
        (void)read_until("\x01never\x01", std::chrono::milliseconds{5});
    }
    return status_;
}

}  // namespace redlock_test
