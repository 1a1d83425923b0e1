// Clock-step detection (README, "Clock steps"): one of five redis-servers runs
// under libfaketime, and its wall clock is stepped forward by far more than
// the TTL during a hold. Keys expire on a node's wall clock, so the lock's key
// vanishes there. The client sees the step at the next renewal's TIME,
// quarantines the node as after a restart, counts it, logs it, tells the
// holders, and a rival cannot count that node's grant to take a majority.
#include "support/cluster.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"
#include "support/server_process.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>
#include <redlock/metrics.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;

namespace {

/// libfaketime's control file: one line, an offset such as "+60" (seconds). The
/// server reads it at every clock read (FAKETIME_NO_CACHE), so writing it steps
/// the clock at once. Written whole, then renamed over the old one.
class fake_clock {
public:
    fake_clock()
        : path_{redlock_test::detail::work_dir() /
                ("faketime-" + std::to_string(::getpid()) + ".rc")} {
        set("+0");
    }
    fake_clock(const fake_clock&) = delete;
    auto operator=(const fake_clock&) -> fake_clock& = delete;
    ~fake_clock() {
        std::error_code ignored;
        std::filesystem::remove(path_, ignored);
    }

    void set(const std::string& offset) const {
        const auto next = path_.string() + ".next";
        {
            std::ofstream out{next, std::ios::trunc};
            out << offset << "\n";
        }
        std::filesystem::rename(next, path_);
    }

    /// A server whose wall clock (only: monotonic time is left alone, as NTP
    /// does) follows this file. Fails the case when libfaketime is missing.
    [[nodiscard]] auto mode() const -> redlock_test::server_mode {
        const std::string faketime = REDLOCK_TEST_LIBFAKETIME;
        if (faketime.empty() || !std::filesystem::exists(faketime)) {
            FAIL("libfaketime.so.1 not found (\"" << faketime
                                                  << "\"): install Debian's faketime package "
                                                     "(scripts/install-deps.sh) and reconfigure");
        }
        redlock_test::server_mode m;
        m.environment = {
            // glibc's malloc first: libfaketime cannot start under jemalloc (see the shim).
            "LD_PRELOAD=" + std::string{REDLOCK_TEST_LIBC_MALLOC} + ":" + faketime,
            "FAKETIME_TIMESTAMP_FILE=" + path_.string(), "FAKETIME_NO_CACHE=1",
            "FAKETIME_DONT_FAKE_MONOTONIC=1"};
        return m;
    }

private:
    std::filesystem::path path_;
};

/// What the callbacks reported, read from the test thread.
struct told {
    std::mutex mutex;
    std::vector<redlock::shrink_report> shrunk;
    std::optional<redlock::error> lost;

    [[nodiscard]] auto shrink_count() -> std::size_t {
        const std::lock_guard held{mutex};
        return shrunk.size();
    }
    [[nodiscard]] auto first_shrink() -> redlock::shrink_report {
        const std::lock_guard held{mutex};
        return shrunk.front();
    }
    [[nodiscard]] auto loss() -> std::optional<redlock::error> {
        const std::lock_guard held{mutex};
        return lost;
    }
};

/// Five masters: four plain ones and, as node 2 of the client's list, one
/// under a fake clock.
struct five_nodes_one_fake_clock {
    redlock_test::cluster plain{4};
    fake_clock clock;
    redlock_test::redis_server stepped{redlock_test::server_options{}, clock.mode()};
    redlock_test::log_capture log;

    [[nodiscard]] auto settings() const -> redlock::client_config {
        auto s =
            redlock_test::fixture_config({plain[0].address(), plain[1].address(), stepped.address(),
                                          plain[2].address(), plain[3].address()});
        // The faked server reads its control file at every clock read: slower.
        s.request_timeout = 500ms;
        s.restart_quarantine = 15s;
        s.logger = log.logger();
        return s;
    }
    [[nodiscard]] auto stepped_name() const -> std::string {
        return "127.0.0.1:" + std::to_string(stepped.port());
    }
};

}  // namespace

TEST_SUITE("clock step") {
    TEST_CASE_FIXTURE(five_nodes_one_fake_clock,
                      "a node whose clock steps forward past the TTL is quarantined and the "
                      "holders are told") {
        auto client = redlock_test::create_client(settings());
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return client.stats().nodes_connected == 5; }));

        // The watcher: auto-renewed on all five, renewing every 500 ms. Its
        // renewals are what notice the step first.
        auto watcher_told = std::make_shared<told>();
        auto watcher = client.acquire(
            "clock:watch",
            {.ttl = 1500ms,
             .auto_renew = true,
             .on_shrunk = [watcher_told](const redlock::lock&, const redlock::shrink_report& r) {
                 const std::lock_guard held{watcher_told->mutex};
                 watcher_told->shrunk.push_back(r);
             }});
        REQUIRE(watcher);

        // The holder: on a bare majority that counts the stepped node (nodes 0,
        // 1 and 2; another owner's keys sit on 3 and 4 while it acquires, then
        // go, as when their holder releases).
        const std::string key = plain.key_of("clock:held");
        plain[2].command({"SET", key, "ghost", "PX", "60000"});
        plain[3].command({"SET", key, "ghost", "PX", "60000"});
        auto holder_told = std::make_shared<told>();
        auto holder = client.acquire(
            "clock:held", {.ttl = 12s,
                           .attempts = 1,
                           .auto_renew = true,
                           .on_lost = [holder_told](const redlock::lock&, const redlock::error& e) {
                               const std::lock_guard held{holder_told->mutex};
                               holder_told->lost = e;
                           }});
        REQUIRE(holder);
        REQUIRE(stepped.command({"GET", key}) == holder->value());
        plain[2].command({"DEL", key});
        plain[3].command({"DEL", key});

        // A minute forward: every key on that node expires (the holder's had 12 s).
        clock.set("+60");
        REQUIRE(stepped.command({"EXISTS", key}) == "0");

        // The watcher's next renewal sends TIME and sees it.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return client.stats().node_clock_steps >= 1; }));
        CHECK(log.contains("redlock: node " + stepped_name() + ": its clock stepped"));

        // A rival now gets nodes 2, 3 and 4 — three of five, were node 2 counted —
        // while the holder still holds on 0, 1 and (it believes) 2. Node 2's yes
        // does not count: nothing overlaps.
        REQUIRE(holder->valid());
        auto rival = client.acquire("clock:held", {.ttl = 5s, .attempts = 1});
        const bool holder_still_valid = holder->valid();
        CHECK_MESSAGE(!(rival && holder_still_valid),
                      "the rival took a majority through the stepped node while the holder held");
        if (!rival) {
            bool discounted = false;
            for (const auto& n : rival.error().nodes) {
                if (n.node == stepped_name() && n.detail.find("its clock stepped") == 0)
                    discounted = true;
            }
            CHECK_MESSAGE(discounted, rival.error().message);
        }

        // The watcher is told at a renewal that went through: its key was gone
        // on the stepped node, which no longer counts.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return watcher_told->shrink_count() >= 1; }));
        const auto report = watcher_told->first_shrink();
        REQUIRE(report.nodes.size() == 1);
        CHECK(report.nodes[0].node == stepped_name());
        CHECK(report.nodes[0].detail.find("its clock stepped") == 0);
        CHECK(report.nodes[0].detail.find("forward") != std::string::npos);
        CHECK(report.message.find(stepped_name()) != std::string::npos);
        CHECK(watcher->valid());

        // The holder's majority shrank below a majority: its renewal fails, and
        // the loss names the stepped node.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return holder_told->loss().has_value(); }));
        const auto loss = *holder_told->loss();
        CHECK(loss.code == redlock::errc::lock_lost);
        CHECK(loss.message.find(stepped_name() + ": its clock stepped") != std::string::npos);
        CHECK_FALSE(holder->valid());

        // Counted once, on that node only, in the stats and the Prometheus text.
        const auto metrics = client.metrics();
        REQUIRE(metrics.nodes.size() == 5);
        for (std::size_t i = 0; i < 5; ++i)
            CHECK(metrics.nodes[i].clock_steps == (i == 2 ? 1U : 0U));
        CHECK(client.stats().node_clock_steps == 1);
        CHECK(redlock::to_prometheus(metrics).find("redlock_node_clock_steps_total{node=\"" +
                                                   stepped_name() + "\"} 1\n") !=
              std::string::npos);
        (void)client.release(*watcher);
    }
}
