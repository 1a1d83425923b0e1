#include "process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>

extern char** environ;  // NOLINT: POSIX declares it nowhere else

namespace redlock_torture {

auto spawn(const std::vector<std::string>& argv, const posix_spawn_file_actions_t& actions,
           std::initializer_list<int> default_signals, pid_t& pid) -> int {
    if (argv.empty()) return EINVAL;
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none;
    sigset_t defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : default_signals) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    // posix_spawn takes char* const[]: a copy whose characters may be pointed at.
    std::vector<std::string> copy = argv;
    std::vector<char*> args;
    for (auto& a : copy) args.push_back(a.data());
    args.push_back(nullptr);
    const int rc =
        ::posix_spawn(&pid, copy.front().c_str(), &actions, &attributes, args.data(), environ);
    posix_spawnattr_destroy(&attributes);
    return rc;
}

child_process::child_process(const std::vector<std::string>& argv, const std::filesystem::path& log)
    : log_{log} {
    if (argv.empty()) throw std::invalid_argument("child_process: no program");
    int fds[2];
    // Close-on-exec: the redis-servers started later must not inherit the write end,
    // or the worker would never see its stdin close.
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string{"pipe2: "} + std::strerror(errno));
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        const int saved = errno;
        ::close(fds[0]);
        ::close(fds[1]);
        throw std::runtime_error("cannot open " + log.string() + ": " + std::strerror(saved));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[0], 0);
    posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
    // Signals ignored or blocked here are not the worker's business.
    const int rc = spawn(argv, actions, {SIGPIPE}, pid_);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[0]);
    ::close(log_fd);
    if (rc != 0) {
        ::close(fds[1]);
        throw std::runtime_error("cannot start " + argv.front() + ": " + std::strerror(rc));
    }
    stdin_fd_ = fds[1];
}

child_process::child_process(child_process&& other) noexcept
    : pid_{std::exchange(other.pid_, -1)},
      stdin_fd_{std::exchange(other.stdin_fd_, -1)},
      status_{other.status_},
      reaped_{std::exchange(other.reaped_, true)},
      log_{std::move(other.log_)} {}

auto child_process::operator=(child_process&& other) noexcept -> child_process& {
    if (this != &other) {
        kill();
        close_stdin();
        pid_ = std::exchange(other.pid_, -1);
        stdin_fd_ = std::exchange(other.stdin_fd_, -1);
        status_ = other.status_;
        reaped_ = std::exchange(other.reaped_, true);
        log_ = std::move(other.log_);
    }
    return *this;
}

child_process::~child_process() {
    kill();
    close_stdin();
}

void child_process::close_stdin() noexcept {
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    stdin_fd_ = -1;
}

auto child_process::send(std::string_view bytes) noexcept -> bool {
    if (stdin_fd_ < 0) return false;
    sigset_t pipe;
    sigset_t old;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    const ssize_t n = ::write(stdin_fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EPIPE) {
        const timespec now{};
        sigtimedwait(&pipe, nullptr, &now);  // the SIGPIPE it raised, pending: consumed
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return n == static_cast<ssize_t>(bytes.size());
}

auto child_process::exited() -> bool {
    if (reaped_ || pid_ <= 0) return true;
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return reaped_;
}

auto child_process::wait_for(std::chrono::milliseconds timeout) -> bool {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exited()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    return true;
}

void child_process::kill() noexcept {
    if (reaped_ || pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    if (::waitpid(pid_, &status_, 0) == pid_) reaped_ = true;
}

auto child_process::exited_cleanly() const noexcept -> bool {
    return reaped_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
}

auto child_process::describe() const -> std::string {
    if (!reaped_) return "is running";
    if (WIFEXITED(status_)) return "exited with status " + std::to_string(WEXITSTATUS(status_));
    if (WIFSIGNALED(status_)) {
        return "was killed by signal " + std::to_string(WTERMSIG(status_)) + " (" +
               strsignal(WTERMSIG(status_)) + ")";
    }
    return "stopped";
}

}  // namespace redlock_torture
