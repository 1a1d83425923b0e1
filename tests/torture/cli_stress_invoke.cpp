#include "cli_stress_invoke.hpp"

#include "process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace redlock_torture {

using std::chrono::steady_clock;

auto invocation_outcome::describe() const -> std::string {
    if (!spawn_error.empty()) return "spawn failed: " + spawn_error;
    if (hung) return "hung (SIGKILLed by the test)";
    if (signal != 0) {
        return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    }
    return "exit " + std::to_string(exit_code);
}

auto slurp(const std::filesystem::path& file, std::size_t limit) -> std::string {
    std::ifstream in{file};
    std::ostringstream text;
    text << in.rdbuf();
    auto all = text.str();
    return all.size() > limit ? all.substr(0, limit) + "..." : all;
}

namespace {

/// Waits until `pid` has ended or `bound` has passed; true if it ended. A pidfd lets six
/// threads wait without waking up every few milliseconds on two cores; the polling
/// fallback is for kernels without pidfd_open.
auto wait_ended(pid_t pid, std::chrono::milliseconds bound) -> bool {
    // The raw syscall: not every glibc this builds with declares pidfd_open().
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // close-on-exec
    if (fd >= 0) {
        const auto deadline = steady_clock::now() + bound;
        for (;;) {
            const auto left =
                std::chrono::ceil<std::chrono::milliseconds>(deadline - steady_clock::now());
            pollfd entry{fd, POLLIN, 0};
            const int ready =
                ::poll(&entry, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
            if (ready > 0) break;
            if (ready == 0) {
                ::close(fd);
                return false;
            }
            if (errno != EINTR) break;  // cannot wait this way: let waitpid block
        }
        ::close(fd);
        return true;
    }
    const auto deadline = steady_clock::now() + bound;
    for (;;) {
        siginfo_t info{};
        // WNOWAIT: leaves it to be reaped by the caller's waitpid.
        if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
            info.si_pid != 0)
            return true;
        if (steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
}

}  // namespace

auto invoke(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file,
            std::chrono::milliseconds bound) -> invocation_outcome {
    invocation_outcome outcome;
    const auto started = steady_clock::now();
    // addopen: the files are opened in the child only, so no descriptor of ours exists
    // for a redis-server forked meanwhile by the test thread to inherit.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    // redlock keeps ignored signals ignored for its command, and does not forward them:
    // start it as a shell would start a foreground job, with nothing ignored or blocked.
    pid_t pid = -1;
    const int rc = spawn(
        argv, actions, {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2}, pid);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        outcome.spawn_error = (argv.empty() ? "" : argv.front()) + ": " + std::strerror(rc);
        return outcome;
    }

    if (!wait_ended(pid, bound)) {
        outcome.hung = true;
        ::kill(pid, SIGKILL);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    outcome.took = steady_clock::now() - started;
    if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status) && !outcome.hung) outcome.signal = WTERMSIG(status);
    return outcome;
}

}  // namespace redlock_torture
