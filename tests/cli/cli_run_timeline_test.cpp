// `redlock run` ends its command before the lock can pass on (issue 26, item 5). A run
// whose command ignores SIGTERM is cut off from three of five masters by fault proxies
// while a rival (a library client that reaches every master directly) waits for the
// same resource. The command's death, seen through a pidfd, must come before the
// rival's grant in every trial. Before the timeline, run sent SIGTERM only once the
// validity had ended and SIGKILL 5 s later: the rival held the lock for those 5 s
// while the command ran on.
#include "cli/cli_process.hpp"
#include "support/cluster.hpp"
#include "support/fault_proxy.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <redlock/client.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using std::chrono::steady_clock;

namespace {

namespace fs = std::filesystem;
using redlock_test::quoted;

constexpr int trials = 50;
constexpr int ttl_ms = 600;

/// Five masters, a proxy in front of each, and a second config file that names the
/// proxies: the run under test goes through them, the rival does not.
class proxied_cli_cluster : public redlock_test::cli_fixture {
public:
    proxied_cli_cluster()
        : cli_fixture{"redlock-cli-timeline-",
                      {.connect_timeout_ms = 200, .request_timeout_ms = 100, .ttl_ms = ttl_ms}},
          proxied_config{dir / "proxied.json"} {
        auto nodes = nlohmann::json::array();
        for (const auto& s : *this) {
            proxies.emplace_back(s.port());
            nodes.push_back({{"host", "127.0.0.1"}, {"port", proxies.back().port()}});
        }
        auto settings = nlohmann::json::parse(redlock_test::slurp(config));
        settings["nodes"] = nodes;
        std::ofstream{proxied_config} << settings.dump(2);
    }

    /// `redlock --config proxied.json args...`, in the background.
    auto start_proxied(std::vector<std::string> args)
        -> std::unique_ptr<redlock_test::cli_process> {
        args.insert(args.begin(), {"--config", proxied_config.string()});
        return std::make_unique<redlock_test::cli_process>(args, dir);
    }

    std::vector<redlock_test::fault_proxy> proxies;
    fs::path proxied_config;
};

/// When `pid` (not our child) has exited: a pidfd turns readable then. Unset if it
/// has not within `timeout`.
auto await_death(pid_t pid, std::chrono::milliseconds timeout)
    -> std::optional<steady_clock::time_point> {
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) {
        // Already gone and reaped: there is no time to give.
        FAIL("pidfd_open(" << pid << "): " << std::strerror(errno));
        return std::nullopt;
    }
    pollfd p{fd, POLLIN, 0};
    int ready = 0;
    do {
        ready = poll(&p, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    const auto seen = steady_clock::now();
    close(fd);
    if (ready <= 0) return std::nullopt;
    return seen;
}

}  // namespace

TEST_SUITE("cli run timeline") {
    TEST_CASE_FIXTURE(proxied_cli_cluster,
                      "a command that ignores SIGTERM is dead before a rival is granted its lock "
                      "in every one of 50 trials") {
        auto rival = make_client();
        std::vector<long long> margins_ms;
        for (int trial = 0; trial < trials; ++trial) {
            CAPTURE(trial);
            for (auto& p : proxies) p.heal();
            const std::string resource = "timeline-" + std::to_string(trial);
            const auto pid_file = dir / ("pid-" + std::to_string(trial));
            // The trap makes the shell ignore SIGTERM; SIGKILL is the only way out.
            auto run = start_proxied({"--json", "run", "--resource", resource, "--", "sh", "-c",
                                      "trap '' TERM; echo $$ > " + quoted(pid_file.string()) +
                                          "; while :; do sleep 0.02; done"});
            REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s), [&] {
                return redlock_test::slurp(pid_file).find('\n') != std::string::npos;
            }));
            const pid_t command = std::stoi(redlock_test::slurp(pid_file));

            // The rival waits from now on; the cut comes at a different phase of the
            // renewal cycle in each trial.
            std::atomic<bool> decided{false};
            std::optional<steady_clock::time_point> granted_at;
            std::string rival_error;
            redlock::lock rival_lock;
            redlock::lock_options wait;
            wait.max_wait = 10s;
            rival.acquire_async(resource, wait, [&](redlock::result<redlock::lock> got) {
                if (got) {
                    granted_at = steady_clock::now();
                    rival_lock = *got;
                } else {
                    rival_error = got.error().message;
                }
                decided = true;
            });
            std::this_thread::sleep_for(std::chrono::milliseconds{(trial * 37) % (ttl_ms / 2)});
            for (std::size_t i : {0U, 1U, 2U}) proxies[i].blackhole();

            const auto died_at = await_death(command, redlock_test::scaled(10s));
            REQUIRE(died_at.has_value());
            REQUIRE(redlock_test::wait_until(redlock_test::scaled(15s),
                                             [&] { return decided.load(); }));
            INFO("rival: " << rival_error);
            REQUIRE(granted_at.has_value());
            margins_ms.push_back(
                std::chrono::duration_cast<std::chrono::milliseconds>(*granted_at - *died_at)
                    .count());
            INFO("command died " << margins_ms.back() << " ms before the rival's grant");
            CHECK(*died_at < *granted_at);

            for (auto& p : proxies) p.heal();
            const auto ran = run->wait(20s);
            CHECK(ran.status == 70);
            CHECK(redlock_test::one_object(ran).at("child_signal") == SIGKILL);
            (void)rival.release(rival_lock);
        }
        std::sort(margins_ms.begin(), margins_ms.end());
        MESSAGE("death before the rival's grant, ms: least " << margins_ms.front() << ", median "
                                                             << margins_ms[margins_ms.size() / 2]);
    }
}
