// The critical section of the CLI stress test: the command `redlock run` runs while it
// holds the lock, and `redlock elect` while it leads.
//
//   redlock_cli_stress_section FILE INVOCATION DURATION_MS [writer|reader|permit|leader]
//
// Appends "begin <invocation> <kind> <token> <ns>" to FILE, sleeps DURATION_MS, then
// appends "end <invocation> <kind> <token> <ns>", times on CLOCK_MONOTONIC (shared by every process
// of the machine, so sections of different invocations compare directly). Each record is one
// write(2) to a file opened with O_APPEND, so records of sections that run at the same time (which
// is the bug being looked for) cannot interleave within a line.
//
// The kind (default writer) is the one the test asked `redlock run` for; the checker's
// rules depend on it. The token of a writer or a reader is its fence, from REDLOCK_FENCE,
// which `redlock run --fence` sets; a permit has no fence, and its token is the permit
// held, from REDLOCK_PERMIT, which `redlock run --permits` sets ("-" without it: only the
// count of permits is checked then). A leader's token is its term, from REDLOCK_TERM, which
// `redlock elect` sets. Exit status: 0; 3 when the file cannot be written; 4 without
// REDLOCK_FENCE for a writer or a reader, or REDLOCK_TERM for a leader; 2 for bad usage.
// The test counts every one but 0 as unexpected (`redlock elect` exits with its status).

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace {

auto monotonic_ns() -> long long {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<long long>(now.tv_sec) * 1'000'000'000LL + now.tv_nsec;
}

auto append(int fd, const char* tag, const char* invocation, const std::string& kind,
            const char* fence) -> bool {
    const std::string line = std::string{tag} + " " + invocation + " " + kind + " " + fence + " " +
                             std::to_string(monotonic_ns()) + "\n";
    return ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

}  // namespace

int main(int argc, char** argv) {
    const std::string kind = argc == 5 ? argv[4] : "writer";
    if ((argc != 4 && argc != 5) ||
        (kind != "writer" && kind != "reader" && kind != "permit" && kind != "leader")) {
        std::fprintf(stderr,
                     "usage: %s FILE INVOCATION DURATION_MS [writer|reader|permit|leader]\n",
                     argv[0]);
        return 2;
    }
    const char* permit = std::getenv("REDLOCK_PERMIT");
    const bool named = permit != nullptr && *permit != '\0';
    const char* variable = kind == "leader" ? "REDLOCK_TERM" : "REDLOCK_FENCE";
    const char* fence = kind == "permit" ? (named ? permit : "-") : std::getenv(variable);
    if (fence == nullptr || *fence == '\0') {
        std::fprintf(stderr, "section %s: no %s in the environment\n", argv[2], variable);
        return 4;
    }
    const int fd = ::open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        std::fprintf(stderr, "section %s: cannot open %s: %s\n", argv[2], argv[1],
                     std::strerror(errno));
        return 3;
    }
    if (!append(fd, "begin", argv[2], kind, fence)) return 3;
    const long duration_ms = std::strtol(argv[3], nullptr, 10);
    timespec pause{duration_ms / 1000, (duration_ms % 1000) * 1'000'000L};
    while (::nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
    const bool ok = append(fd, "end", argv[2], kind, fence);
    ::close(fd);
    return ok ? 0 : 3;
}
