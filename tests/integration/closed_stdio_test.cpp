// A host process whose standard streams are closed (a daemon, a job started with `0<&-`):
// the next descriptors opened take the numbers 0, 1 and 2, and libuv aborts when it closes
// one of those (uv__close asserts fd > STDERR_FILENO). Found by the landing run of
// scripts/test.sh with standard input closed: the install stage's consumer, which creates
// a client and destroys it, died with SIGABRT. The client now fills a closed standard
// descriptor with /dev/null before its loop opens anything (transport/event_loop.cpp).
#include "support/cluster.hpp"
#include "support/slowdown.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

auto write_config(cluster& nodes, const std::string& name) -> std::string {
    const std::string file =
        "/tmp/redlock-tests/" + name + "-" + std::to_string(::getpid()) + ".json";
    std::ofstream out{file};
    out << R"({"nodes": [)";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        out << (i ? "," : "") << R"({"host": "127.0.0.1", "port": )" << nodes.node(i).port() << "}";
    }
    out << "]}";
    return file;
}

/// Runs the test holder in "release" mode with the descriptors `closed` closed, and
/// returns its wait status (-1 if it had not exited within the bound: it is killed).
auto run_holder_with_closed(const std::string& config, const std::vector<int>& closed) -> int {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    for (const int fd : closed) posix_spawn_file_actions_addclose(&actions, fd);
    const std::string holder = REDLOCK_TEST_HOLDER;
    std::vector<char*> argv{const_cast<char*>(holder.c_str()), const_cast<char*>(config.c_str()),
                            const_cast<char*>("ledger"),       const_cast<char*>("2000"),
                            const_cast<char*>("release"),      nullptr};
    pid_t pid = -1;
    const int spawned =
        ::posix_spawn(&pid, holder.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(spawned == 0);
    int status = -1;
    const bool exited = redlock_test::wait_until(
        redlock_test::scaled(20s), [&] { return ::waitpid(pid, &status, WNOHANG) == pid; });
    if (!exited) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return -1;
    }
    return status;
}

}  // namespace

TEST_SUITE("closed standard streams") {
    TEST_CASE_FIXTURE(cluster,
                      "a client in a process whose standard streams are closed acquires, "
                      "releases and shuts down") {
        const std::string config = write_config(*this, "closed-stdio");
        for (const auto& closed : std::vector<std::vector<int>>{{0}, {1}, {0, 1, 2}}) {
            INFO("closed descriptors: " << closed.size() << ", the first " << closed.front());
            const int status = run_holder_with_closed(config, closed);
            // Before the fix: killed by SIGABRT as its loop closed.
            CHECK(WIFEXITED(status));
            CHECK_FALSE(WIFSIGNALED(status));
            if (WIFEXITED(status)) CHECK(WEXITSTATUS(status) == 0);
            CHECK(count_holding(key_of("ledger")) == 0);
        }
    }
}
