#include "child_process.hpp"

#include <cerrno>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>

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

}  // namespace

auto child_process::spawn(const std::vector<std::string>& argv, const environment& env,
                          const sigset_t& reset) -> result<child_process, int> {
    std::vector<std::string> args = argv;
    std::vector<std::string> envs = build_environment(env);
    auto arg_pointers = pointers(args);
    auto env_pointers = pointers(envs);

    posix_spawnattr_t attr;
    if (const int rc = posix_spawnattr_init(&attr); rc != 0) return failure{rc};
    sigset_t empty;
    sigemptyset(&empty);
    posix_spawnattr_setsigmask(&attr, &empty);
    posix_spawnattr_setsigdefault(&attr, &reset);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, args.front().c_str(), nullptr, &attr, arg_pointers.data(),
                                env_pointers.data());
    posix_spawnattr_destroy(&attr);
    if (rc != 0) return failure{rc};
    return child_process{pid};
}

auto child_process::operator=(child_process&& other) noexcept -> child_process& {
    if (this != &other) {
        kill_and_reap();
        pid_ = std::exchange(other.pid_, -1);
    }
    return *this;
}

child_process::~child_process() {
    kill_and_reap();
}

void child_process::signal(int sig) const noexcept {
    if (pid_ > 0) ::kill(pid_, sig);
}

auto child_process::try_reap() -> std::optional<child_exit> {
    if (pid_ <= 0) return std::nullopt;
    int status = 0;
    pid_t got = 0;
    do {
        got = waitpid(pid_, &status, WNOHANG);
    } while (got < 0 && errno == EINTR);
    if (got != pid_) return std::nullopt;
    pid_ = -1;
    if (WIFSIGNALED(status)) return child_exit{0, WTERMSIG(status)};
    return child_exit{WEXITSTATUS(status), 0};
}

void child_process::kill_and_reap() noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

}  // namespace redlock::cli
