#include "child_process.hpp"

#include "exit_codes.hpp"
#include "terminal_handoff.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;  // NOLINT: POSIX names it so

namespace redlock::cli {
namespace {

auto build_environment(const child_process::environment& env) -> std::vector<std::string> {
    std::vector<std::string> entries;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        const std::string_view entry{*e};
        bool replaced = false;
        for (const auto& [name, value] : env) {
            if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=')
                replaced = true;
        }
        if (!replaced) entries.emplace_back(entry);
    }
    for (const auto& [name, value] : env) {
        if (value) entries.push_back(name + "=" + *value);
    }
    return entries;
}

auto pointers(std::vector<std::string>& strings) -> std::vector<char*> {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

/// The files execvp would try for `name`: itself when it has a '/', else
/// each PATH entry (an empty one: the current directory) joined with it.
auto candidates(const std::string& name) -> std::vector<std::string> {
    if (name.find('/') != std::string::npos) return {name};
    const char* path = std::getenv("PATH");
    const std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/bin:/usr/bin";
    std::vector<std::string> out;
    std::size_t from = 0;
    for (;;) {
        const std::size_t colon = dirs.find(':', from);
        std::string dir{dirs.substr(from, colon == std::string_view::npos ? colon : colon - from)};
        out.push_back((dir.empty() ? std::string{"."} : dir) + "/" + name);
        if (colon == std::string_view::npos) break;
        from = colon + 1;
    }
    return out;
}

/// The child's side, between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(pid_t parent, const sigset_t& reset, const spawn_options& where,
                             char* const* paths, char* const* argv, char* const* envp, int report,
                             int go) noexcept {
    // CMD must not run on without the lock when redlock dies, even by SIGKILL.
    // The death signal is tied to this (the main) thread, which lives until exit.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // redlock may have died before prctl: then no signal comes; the reparented
    // child sees another parent.
    if (getppid() != parent) _exit(exit_not_found);
    // Both sides set the group and the terminal: whichever runs first, CMD
    // never runs outside its group, and redlock never signals a group not yet made.
    if (where.own_group) {
        setpgid(0, 0);
        if (where.terminal >= 0) hand_terminal(where.terminal, getpid());
    }
    // Not before redlock says so (spawn_options::before_exec); end of file
    // instead: redlock died first.
    if (go >= 0) {
        char said = 0;
        ssize_t got = 0;
        do {
            got = read(go, &said, 1);
        } while (got < 0 && errno == EINTR);
        if (got != 1) _exit(exit_not_found);
        close(go);
    }
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sigismember(&reset, sig) == 1) {
            struct sigaction dfl {};
            dfl.sa_handler = SIG_DFL;
            sigemptyset(&dfl.sa_mask);
            sigaction(sig, &dfl, nullptr);
        }
    }
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    // As execvp: the first error other than "not there" wins (EACCES: 126).
    int err = ENOENT;
    for (char* const* path = paths; *path != nullptr; ++path) {
        execve(*path, argv, envp);
        if (errno != ENOENT && errno != ENOTDIR && err == ENOENT) err = errno;
    }
    ssize_t ignored = write(report, &err, sizeof err);
    (void)ignored;
    _exit(exit_not_found);
}

}  // namespace

auto child_process::spawn(const std::vector<std::string>& argv, const environment& env,
                          const sigset_t& reset, const spawn_options& where)
    -> result<child_process, int> {
    // Everything the child needs is prepared here: between fork and exec, in a
    // process with a loop thread, only async-signal-safe calls are allowed (no
    // allocation), so the PATH search is done on candidates built beforehand.
    std::vector<std::string> args = argv;
    std::vector<std::string> envs = build_environment(env);
    std::vector<std::string> paths = candidates(args.front());
    auto arg_pointers = pointers(args);
    auto env_pointers = pointers(envs);
    auto path_pointers = pointers(paths);

    // Closed on exec: a successful exec sends nothing, a failed one its errno.
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return failure{errno};
    // The go-ahead for before_exec: one byte, or end of file if redlock dies.
    int go[2] = {-1, -1};
    if (where.before_exec && pipe2(go, O_CLOEXEC) != 0) {
        const int err = errno;
        close(report[0]);
        close(report[1]);
        return failure{err};
    }
    const auto close_go = [&go](int end) {
        if (go[end] >= 0) close(go[end]);
        go[end] = -1;
    };
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        const int err = errno;
        close(report[0]);
        close(report[1]);
        close_go(0);
        close_go(1);
        return failure{err};
    }
    if (pid == 0) {
        close(report[0]);
        close_go(1);
        exec_child(parent, reset, where, path_pointers.data(), arg_pointers.data(),
                   env_pointers.data(), report[1], go[0]);
    }
    close(report[1]);
    close_go(0);
    if (where.own_group) {
        setpgid(pid, pid);  // EACCES once it has exec'd: it made the group itself
        if (where.terminal >= 0) hand_terminal(where.terminal, pid);
    }
    if (where.before_exec) {
        where.before_exec(pid);
        const char go_ahead = 'g';
        ssize_t ignored = write(go[1], &go_ahead, 1);
        (void)ignored;
        close_go(1);
    }
    int err = 0;
    ssize_t got = 0;
    do {
        got = read(report[0], &err, sizeof err);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == static_cast<ssize_t>(sizeof err)) {
        while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        if (where.own_group && where.terminal >= 0) hand_terminal(where.terminal, getpgrp());
        return failure{err};
    }
    return child_process{pid, where.own_group ? pid : 0};
}

auto child_process::operator=(child_process&& other) noexcept -> child_process& {
    if (this != &other) {
        kill_and_reap();
        pid_ = std::exchange(other.pid_, -1);
        group_ = std::exchange(other.group_, 0);
    }
    return *this;
}

child_process::~child_process() {
    kill_and_reap();
}

void child_process::signal(int sig) const noexcept {
    // The group outlives CMD while a process CMD started runs; CMD may also
    // have left it (setsid), and then its pid is still reached.
    const bool to_group = group_ > 0 && ::kill(-group_, sig) == 0;
    if (!to_group && pid_ > 0) ::kill(pid_, sig);
}

auto child_process::group_alive() noexcept -> bool {
    if (group_ <= 0) return false;
    if (pid_ <= 0) {
        // Never before CMD is reaped: that would take its exit status.
        while (waitpid(-group_, nullptr, WNOHANG) > 0) {
        }
    }
    return ::kill(-group_, 0) == 0;
}

auto child_process::poll() -> child_state {
    if (pid_ <= 0) return {};
    int status = 0;
    pid_t got = 0;
    do {
        got = waitpid(pid_, &status, WNOHANG | WUNTRACED);
    } while (got < 0 && errno == EINTR);
    if (got != pid_) return {};
    if (WIFSTOPPED(status)) return {std::nullopt, WSTOPSIG(status)};
    pid_ = -1;
    if (WIFSIGNALED(status)) return {child_exit{0, WTERMSIG(status)}, 0};
    return {child_exit{WEXITSTATUS(status), 0}, 0};
}

void child_process::kill_and_reap() noexcept {
    if (group_ > 0) ::kill(-group_, SIGKILL);
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

}  // namespace redlock::cli
