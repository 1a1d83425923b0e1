#include "support/stock_hosts.hpp"

#include <arpa/inet.h>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <fstream>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <sstream>
#include <string>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace redlock_test {

const char* const stock_etc_hosts =
    "127.0.0.1\tlocalhost\n"
    "\n"
    "# The following lines are desirable for IPv6 capable hosts\n"
    "::1     localhost ip6-localhost ip6-loopback\n"
    "ff02::1 ip6-allnodes\n"
    "ff02::2 ip6-allrouters\n";

namespace {

[[noreturn]] void child_main(const std::function<int()>& body, int err_fd) {
    // Defaults for every fatal signal: an abort must end the child as an abort (the parent
    // checks WIFSIGNALED), not run doctest's reporter or redis_server's handler, which
    // would kill the parent's servers (their pids were copied into the child).
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
        struct sigaction default_action {};
        default_action.sa_handler = SIG_DFL;
        sigemptyset(&default_action.sa_mask);
        ::sigaction(sig, &default_action, nullptr);
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::dup2(err_fd, STDERR_FILENO);
    ::close(err_fd);
    int status = 1;
    try {
        status = body();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "child: exception: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "child: unknown exception\n");
    }
    std::fflush(stderr);
    ::_exit(status);
}

}  // namespace

auto child_outcome::exited_cleanly() const -> bool {
    return !timed_out && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

auto child_outcome::describe() const -> std::string {
    std::string how;
    if (timed_out) {
        how = "timed out (killed)";
    } else if (WIFEXITED(wait_status)) {
        how = "exited with " + std::to_string(WEXITSTATUS(wait_status));
    } else if (WIFSIGNALED(wait_status)) {
        how = "killed by signal " + std::to_string(WTERMSIG(wait_status)) + " (" +
              ::strsignal(WTERMSIG(wait_status)) + ")";
    } else {
        how = "ended with wait status " + std::to_string(wait_status);
    }
    return "child " + how + "; its stderr:\n" + (output.empty() ? "(nothing)" : output);
}

auto run_in_child(const std::function<int()>& body, std::chrono::milliseconds limit)
    -> child_outcome {
    std::array<int, 2> pipe_fds{};
    if (::pipe2(pipe_fds.data(), O_CLOEXEC) != 0) {
        return {.wait_status = 0, .output = "pipe2 failed", .timed_out = true};
    }
    std::fflush(nullptr);  // nothing buffered is written twice
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
        return {.wait_status = 0, .output = "fork failed", .timed_out = true};
    }
    if (pid == 0) {
        ::close(pipe_fds[0]);
        child_main(body, pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    child_outcome outcome;
    // Read until EOF (the child is gone, or closed stderr), so that a chatty child never
    // blocks on a full pipe; then reap it.
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::array<char, 4096> chunk{};
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            outcome.timed_out = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd readable{pipe_fds[0], POLLIN, 0};
        const int ready = ::poll(&readable, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;  // the deadline check above ends it
        const ssize_t n = ::read(pipe_fds[0], chunk.data(), chunk.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        outcome.output.append(chunk.data(), static_cast<std::size_t>(n));
    }
    ::close(pipe_fds[0]);
    while (::waitpid(pid, &outcome.wait_status, 0) < 0 && errno == EINTR) {
    }
    return outcome;
}

namespace {

/// The localhost lines of a hosts file, blanks collapsed: what decides how localhost
/// resolves (comments and other names aside).
auto localhost_lines(std::istream& in) -> std::vector<std::string> {
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        line = line.substr(0, line.find('#'));
        std::istringstream words{line};
        std::string address;
        std::string name;
        std::string joined;
        if (!(words >> address)) continue;
        bool names_localhost = false;
        for (joined = address; words >> name;) {
            joined += " " + name;
            names_localhost = names_localhost || name == "localhost";
        }
        if (names_localhost) lines.push_back(joined);
    }
    return lines;
}

/// The mount point, as this process sees it, of the mount that holds `path`: the longest
/// mount point in /proc/self/mountinfo that is a prefix of it. Empty when none is visible
/// (a chroot whose directory is no mount point of its own).
auto mount_point_of(const std::string& path) -> std::string {
    std::ifstream info{"/proc/self/mountinfo"};
    std::string best;
    for (std::string line; std::getline(info, line);) {
        std::istringstream columns{line};
        std::string id, parent, device, root, point;
        if (!(columns >> id >> parent >> device >> root >> point)) continue;
        const bool contains = point == "/" || path == point || path.starts_with(point + "/");
        if (contains && point.size() >= best.size()) best = point;
    }
    return best;
}

}  // namespace

auto use_stock_hosts() -> std::string {
    // Already the stock file (a stock install, or a packager's chroot made from one): use it as
    // it is. Nothing to mount, so this also works where mounting cannot (a chroot's "/" is no
    // mount point).
    std::ifstream current{"/etc/hosts"};
    std::istringstream stock{stock_etc_hosts};
    if (current && localhost_lines(current) == localhost_lines(stock)) return {};

    char path[] = "/tmp/redlock-stock-hosts-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) return std::string{"mkstemp: "} + std::strerror(errno);
    const std::size_t size = std::strlen(stock_etc_hosts);
    const bool written = ::write(fd, stock_etc_hosts, size) == static_cast<ssize_t>(size);
    ::fchmod(fd, 0644);
    ::close(fd);
    std::string problem;
    // The bind mount must not propagate to the rest of the system: the mount that holds
    // /etc/hosts is made private in a mount namespace of our own. That is "/" on a normal
    // system; in a chroot it is whatever mount holds the chroot's /etc, if one is visible.
    const std::string holder = mount_point_of("/etc/hosts");
    if (!written) {
        problem = "cannot write " + std::string{path};
    } else if (::unshare(CLONE_NEWNS) != 0) {
        problem = std::string{"unshare(CLONE_NEWNS): "} + std::strerror(errno);
    } else if (holder.empty()) {
        problem =
            "no mount that holds /etc/hosts is visible here (a chroot whose directory is "
            "not a mount point), so a bind mount over it could not be kept private; "
            "give the chroot the stock /etc/hosts (localhost as 127.0.0.1 and ::1)";
    } else if (::mount(nullptr, holder.c_str(), nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        problem = "making " + holder + " private: " + std::strerror(errno);
    } else if (::mount(path, "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
        problem = std::string{"bind-mounting over /etc/hosts: "} + std::strerror(errno);
    }
    ::unlink(path);  // the bind mount keeps the file alive
    return problem;
}

auto resolve_all(const std::string& host) -> std::vector<std::string> {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return {};
    std::vector<std::string> addresses;
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
        std::array<char, INET6_ADDRSTRLEN> text{};
        const void* raw = a->ai_family == AF_INET6
                              ? static_cast<const void*>(
                                    &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr)
                              : static_cast<const void*>(
                                    &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr);
        if (::inet_ntop(a->ai_family, raw, text.data(), text.size()) != nullptr) {
            addresses.emplace_back(text.data());
        }
    }
    ::freeaddrinfo(found);
    return addresses;
}

}  // namespace redlock_test
