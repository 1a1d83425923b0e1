// client::metrics() and to_prometheus() against a known workload on real
// servers, the text checked by the reference parser (prometheus_client, run by
// the system python3: tests/integration/parse_metrics.py).
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <redlock/client.hpp>
#include <redlock/metrics.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// Runs the reference parser over `text`; fails the case if it cannot.
auto parse_with_prometheus_client(const std::string& text) -> nlohmann::json {
    const auto file = std::filesystem::temp_directory_path() /
                      ("redlock-metrics-" + std::to_string(::getpid()) + ".txt");
    std::ofstream{file} << text;
    const std::string command = std::string{REDLOCK_TEST_PYTHON} + " " + REDLOCK_SOURCE_DIR +
                                "/tests/integration/parse_metrics.py " + file.string();
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    const int status = ::pclose(pipe);
    std::filesystem::remove(file);
    INFO("command: " << command);
    INFO("a missing module means: apt-get install python3-prometheus-client");
    REQUIRE(status == 0);
    return nlohmann::json::parse(out);
}

/// The value of the sample `name` whose labels include `labels`; fails if none.
auto value_of(const nlohmann::json& samples, const std::string& name,
              const std::map<std::string, std::string>& labels = {}) -> double {
    for (const auto& s : samples) {
        if (s["name"] != name) continue;
        bool match = true;
        for (const auto& [k, v] : labels) match = match && s["labels"].value(k, "") == v;
        if (match) return s["value"].get<double>();
    }
    FAIL("no sample " << name << " with the labels asked for");
    return -1;
}

}  // namespace

TEST_SUITE("metrics") {
    TEST_CASE_FIXTURE(cluster,
                      "a known workload shows in the Prometheus text, as parsed by "
                      "prometheus_client") {
        auto settings = config();
        settings.lock.ttl = 3000ms;
        auto locks = make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        const std::string down = "127.0.0.1:" + std::to_string(node(4).port());
        const std::string slow = "127.0.0.1:" + std::to_string(node(3).port());
        const std::string healthy = "127.0.0.1:" + std::to_string(node(0).port());
        node(4).crash();   // unreachable from now on
        node(3).freeze();  // answers nothing: its requests time out
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return !locks.metrics().nodes[4].up; }));

        constexpr int acquires = 10;
        constexpr int extends = 4;
        constexpr int releases = 6;
        std::vector<redlock::lock> held;
        for (int i = 0; i < acquires; ++i) {
            auto l = locks.acquire("metrics:" + std::to_string(i));
            REQUIRE(l);
            held.push_back(*l);
        }
        CHECK(locks.metrics().locks_held == acquires);
        for (int i = 0; i < extends; ++i) REQUIRE(locks.extend(held[i], 3000ms));
        for (int i = 0; i < releases; ++i) REQUIRE(locks.release(held[i]));
        CHECK(locks.metrics().locks_held == acquires - releases);

        // A contended acquisition that waits for the holder's release ...
        auto holder = locks.acquire("metrics:contended");
        REQUIRE(holder);
        redlock::result<redlock::lock> waited{redlock::lock{}};
        std::thread waiter{[&] {
            redlock::lock_options wait;
            wait.max_wait = 5s;
            waited = locks.acquire("metrics:contended", wait);
        }};
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.metrics().waiters == 1; }));
        std::this_thread::sleep_for(100ms);
        REQUIRE(locks.release(*holder));
        waiter.join();
        REQUIRE(waited);
        // ... and one that does not.
        redlock::lock_options once;
        once.attempts = 1;
        const auto refused = locks.acquire("metrics:contended", once);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::contended);
        REQUIRE(locks.release(*waited));

        const redlock::metrics_snapshot m = locks.metrics();
        const std::string text = redlock::to_prometheus(m);
        INFO(text);
        const nlohmann::json samples = parse_with_prometheus_client(text);
        const std::string p = "redlock_";

        CHECK(value_of(samples, p + "acquire_duration_seconds_count", {{"outcome", "ok"}}) ==
              acquires + 2);
        CHECK(value_of(samples, p + "acquire_duration_seconds_bucket",
                       {{"outcome", "ok"}, {"le", "+Inf"}}) == acquires + 2);
        CHECK(value_of(samples, p + "acquire_duration_seconds_count", {{"outcome", "contended"}}) ==
              1);
        CHECK(value_of(samples, p + "acquire_duration_seconds_count",
                       {{"outcome", "unreachable"}}) == 0);
        CHECK(value_of(samples, p + "acquire_duration_seconds_sum", {{"outcome", "ok"}}) > 0);
        CHECK(value_of(samples, p + "release_duration_seconds_count") == releases + 2);
        CHECK(value_of(samples, p + "extend_duration_seconds_count") == extends);
        CHECK(value_of(samples, p + "wait_duration_seconds_count") == 1);
        // The waiter waited for the holder's 100 ms at least.
        CHECK(value_of(samples, p + "wait_duration_seconds_sum") >= 0.1);
        CHECK(value_of(samples, p + "wait_duration_seconds_bucket", {{"le", "0.05"}}) == 0);

        CHECK(value_of(samples, p + "locks_held") == acquires - releases);
        CHECK(value_of(samples, p + "waiters") == 0);
        CHECK(value_of(samples, p + "locks_lost_total") == 0);
        CHECK(value_of(samples, p + "renewals_total") == 0);
        CHECK(value_of(samples, p + "acquire_attempts_total") >= acquires + 3);

        CHECK(value_of(samples, p + "node_up", {{"node", healthy}}) == 1);
        CHECK(value_of(samples, p + "node_up", {{"node", down}}) == 0);
        CHECK(value_of(samples, p + "node_rtt_seconds", {{"node", healthy}}) > 0);
        CHECK(value_of(samples, p + "node_rtt_seconds", {{"node", healthy}}) < 0.5);
        CHECK(value_of(samples, p + "node_errors_total",
                       {{"node", down}, {"kind", "unreachable"}}) > 0);
        CHECK(value_of(samples, p + "node_errors_total", {{"node", slow}, {"kind", "timeout"}}) >
              0);
        CHECK(value_of(samples, p + "node_errors_total",
                       {{"node", healthy}, {"kind", "timeout"}}) == 0);
        CHECK(value_of(samples, p + "node_errors_total",
                       {{"node", healthy}, {"kind", "error_reply"}}) == 0);
        CHECK(value_of(samples, p + "node_connects_total", {{"node", healthy}}) == 1);
        node(3).thaw();

        // Dropping the last handle of a lock never released takes it off the gauge.
        held.clear();
        CHECK(locks.metrics().locks_held == 0);
    }
}
