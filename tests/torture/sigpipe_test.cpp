// A client process must survive nodes that close or reset its connections.
//
// Five nodes here sit behind fault proxies whose target is down: every connection is
// accepted and closed at once, as a TCP load balancer or sidecar in front of a dead
// Redis does. The client writes its handshake and queued commands on connections the
// peer has already closed; write(2) then fails with EPIPE and raises SIGPIPE, unless the
// writing thread blocks or ignores it. The worker process runs the public API only and,
// with `--sigpipe default`, leaves SIGPIPE at its default disposition, as an application
// that embeds the library does unless it knows to ignore it (the CLI does: cli/main.cpp).
#include "process.hpp"
#include "support/fault_proxy.hpp"
#include "support/redis_server.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

/// Runs three workers for `period` against five nodes that accept and close every
/// connection, then stops them; returns them, exited. (Without protection, one worker
/// dies of SIGPIPE within a few seconds most of the time; three make it a near certainty.)
auto run_workers_against_closing_nodes(const std::string& sigpipe, std::chrono::milliseconds period)
    -> std::vector<redlock_torture::child_process> {
    std::vector<redlock_test::fault_proxy> proxies;
    for (int i = 0; i < 5; ++i) proxies.emplace_back(redlock_test::free_port());  // nothing there
    const fs::path dir = fs::temp_directory_path() / "redlock-tests" /
                         ("sigpipe-" + std::to_string(::getpid()) + "-" + sigpipe);
    fs::create_directories(dir);
    std::string nodes;
    for (const auto& p : proxies) {
        nodes += (nodes.empty() ? "" : ", ") + std::string{R"({"host": "127.0.0.1", "port": )"} +
                 std::to_string(p.port()) + "}";
    }
    std::ofstream{dir / "cluster.json"}
        << R"({"nodes": [)" << nodes
        << R"(], "reconnect": {"min_delay_ms": 20, "max_delay_ms": 200}, "lock": {"ttl_ms": 1000}})";
    std::vector<redlock_torture::child_process> workers;
    for (int i = 0; i < 3; ++i) {
        const std::string id = std::to_string(i);
        workers.emplace_back(
            std::vector<std::string>{REDLOCK_TORTURE_WORKER, "--config",
                                     (dir / "cluster.json").string(), "--id", id, "--out",
                                     (dir / ("worker-" + id + ".records")).string(), "--seed", id,
                                     "--resources", "sigpipe:a", "--sigpipe", sigpipe},
            dir / ("worker-" + id + ".log"));
    }
    const auto deadline = std::chrono::steady_clock::now() + period;
    for (auto& w : workers) {  // a worker may die before the period is over
        (void)w.wait_for(std::chrono::duration_cast<std::chrono::milliseconds>(
            std::max(deadline - std::chrono::steady_clock::now(),
                     std::chrono::steady_clock::duration::zero())));
    }
    bool all_clean = true;
    for (auto& w : workers) {
        w.close_stdin();
        if (!w.wait_for(10s)) w.kill();
        all_clean = all_clean && w.exited_cleanly();
    }
    if (all_clean) {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
    return workers;
}

}  // namespace

TEST_SUITE("client process under connection resets") {
    // Found by the torture test (seed 603257047, before commit 195c3b9): a worker died of
    // SIGPIPE while a node behind its proxy was down. node_connection writes with
    // uv_try_write()/uv_write(), i.e. write(2); the owned loop thread now blocks SIGPIPE
    // (lib/transport/event_loop.cpp), so the write fails with EPIPE instead. Before that fix
    // this case failed every time (a worker killed by signal 13 within ~2 s).
    // A client on an attached loop (client::create(config, loop)) is not covered: that
    // thread's signal mask is the application's.
    TEST_CASE("workers that keep SIGPIPE's default survive nodes that close at once") {
        for (const auto& worker : run_workers_against_closing_nodes("default", 6000ms)) {
            CHECK_MESSAGE(worker.exited_cleanly(),
                          "a worker " << worker.describe() << "; see " << worker.log().string());
        }
    }
}
