// Waiting without spinning: waiters queue per resource on each node, a release
// wakes the first live waiter only, a failed attempt learns how long the holder
// has left, and fair mode grants in arrival order.
#include "support/cluster.hpp"
#include "support/command_stats.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using steady = std::chrono::steady_clock;

namespace {

/// Commands the clients sent (support/command_stats.hpp): the waiting path
/// uses scripts only, so EVAL and EVALSHA are all of them.
auto commands_executed(const cluster& nodes) -> long long {
    long long total = 0;
    for (const auto& server : nodes) {
        if (!server.running()) continue;
        const std::string text = redlock_test::command_stats(server);
        total += redlock_test::command_calls(text, "eval") +
                 redlock_test::command_calls(text, "evalsha");
    }
    return total;
}

auto queue_keys_left(const cluster& nodes) -> long long {
    long long left = 0;
    for (const auto& server : nodes) {
        const std::string keys =
            server.command({"EVAL", "return #redis.call('KEYS', ARGV[1])", "0", "redlock-queue:*"})
                .value_or("0");
        left += std::stoll(keys);
    }
    return left;
}

auto median(std::vector<double> values) -> double {
    std::sort(values.begin(), values.end());
    return values.empty() ? 0 : values[values.size() / 2];
}

struct grant {
    steady::time_point granted;
    steady::time_point released;
};

}  // namespace

TEST_SUITE("waiting") {
    TEST_CASE_FIXTURE(cluster, "a waiter granted at its first attempt touches no queue") {
        // Nothing of a waiter is on a node before its first attempt: its grant there looks
        // for no offer and removes no entry (wait_acquire_source, ARGV[8]). A waiter granted
        // at a later attempt still leaves nothing behind (the tests below).
        auto locks = make_client();
        for (const redlock::wait_mode mode :
             {redlock::wait_mode::fair, redlock::wait_mode::targeted}) {
            for (const bool fencing : {false, true}) {
                INFO("wait mode " << static_cast<int>(mode) << ", fencing " << fencing);
                for (const auto& server : *this) REQUIRE(server.command({"CONFIG", "RESETSTAT"}));
                redlock::lock_options wait;
                wait.max_wait = 2s;
                wait.wait = mode;
                wait.fencing = fencing;
                auto held = locks.acquire("fresh", wait);
                REQUIRE(held);
                // acquire returns at a majority: let the slower nodes run the script too.
                // The waiting script is what granted it (a plain SET would prove nothing).
                for (const auto& server : *this) {
                    REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] {
                        return redlock_test::command_calls(redlock_test::command_stats(server),
                                                           "evalsha") >= 1;
                    }));
                }
                for (const auto& server : *this) {
                    const std::string stats = redlock_test::command_stats(server);
                    CHECK(redlock_test::command_calls(stats, "zrem") == 0);
                    CHECK(redlock_test::command_calls(stats, "hdel") == 0);
                    CHECK(redlock_test::command_calls(stats, "hget") == 0);
                }
                std::size_t holding = 0;  // (the key's name is right)
                for (const auto& server : *this)
                    holding += server.command({"EXISTS", "redlock:{fresh}"}) == "1" ? 1 : 0;
                CHECK(holding >= 3);
                CHECK(locks.release(*held));
                // release returns at a majority too: the next round's counts start once every
                // node ran it (the key gone), as its clean-up of a waiter counts HDEL and ZREM.
                for (const auto& server : *this) {
                    REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] {
                        return server.command({"EXISTS", "redlock:{fresh}"}) == "0";
                    }));
                }
                CHECK(queue_keys_left(*this) == 0);
            }
        }
    }

    TEST_CASE_FIXTURE(cluster,
                      "sixteen contenders all acquire, handed off by notification, at under 20 "
                      "commands per grant") {
        auto settings = config();
        settings.retry.delay = 200ms;  // what a poller would wait between attempts
        settings.retry.jitter = 100ms;
        auto locks = make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        std::mutex mutex;
        std::vector<grant> grants;
        std::atomic<int> inside{0};
        std::atomic<int> overlaps{0};
        std::atomic<int> failures{0};
        const long long commands_before = commands_executed(*this);

        std::vector<std::thread> contenders;
        for (int c = 0; c < 16; ++c) {
            contenders.emplace_back([&] {
                for (int round = 0; round < 3; ++round) {
                    redlock::lock_options wait;
                    wait.max_wait = 20s;
                    auto held = locks.acquire("ledger", wait);
                    if (!held) {
                        ++failures;
                        continue;
                    }
                    const auto granted = steady::now();
                    if (inside.fetch_add(1) != 0) ++overlaps;
                    std::this_thread::sleep_for(1ms);  // the critical section
                    inside.fetch_sub(1);
                    const auto released = steady::now();
                    (void)locks.release(*held);
                    std::lock_guard guard{mutex};
                    grants.push_back({granted, released});
                }
            });
        }
        for (auto& t : contenders) t.join();
        const long long commands = commands_executed(*this) - commands_before;

        CHECK(failures == 0);
        CHECK(overlaps == 0);
        REQUIRE(grants.size() == 48);
        std::sort(grants.begin(), grants.end(),
                  [](const grant& a, const grant& b) { return a.granted < b.granted; });
        std::vector<double> handoffs;
        for (std::size_t i = 1; i < grants.size(); ++i) {
            handoffs.push_back(std::chrono::duration<double, std::milli>(grants[i].granted -
                                                                         grants[i - 1].released)
                                   .count());
        }
        const double median_ms = median(handoffs);
        MESSAGE("median hand-off " << median_ms << " ms; commands per grant "
                                   << static_cast<double>(commands) / 48.0);
        CHECK(median_ms < 50.0);  // a poller would wait 200-300 ms
        CHECK(static_cast<double>(commands) / 48.0 < 20.0);
        // Nothing is left behind: no queue entry, and the subscriptions go once nobody waits.
        CHECK(redlock_test::wait_until(redlock_test::scaled(2s),
                                       [&] { return queue_keys_left(*this) == 0; }));
        CHECK(locks.stats().waiters == 0);
        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return locks.stats().subscriber_connections == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "waiters that give up leave no queue entry and no subscription") {
        auto owner = make_client();
        auto waiters = make_client();
        auto held = owner.acquire("ledger");
        REQUIRE(held);
        std::atomic<int> done{0};
        std::vector<redlock::errc> codes(4);

        for (int i = 0; i < 4; ++i) {
            redlock::lock_options wait;
            wait.max_wait = 300ms;
            waiters.acquire_async("ledger", wait, [&, i](redlock::result<redlock::lock> r) {
                codes[static_cast<std::size_t>(i)] =
                    r ? redlock::errc{} : static_cast<redlock::errc>(r.error().code.value());
                ++done;
            });
        }

        REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] { return done == 4; }));
        for (auto code : codes) CHECK(code == redlock::errc::contended);
        CHECK(queue_keys_left(*this) == 0);
        CHECK(waiters.stats().waiters == 0);
        CHECK(redlock_test::wait_until(
            redlock_test::scaled(5s), [&] { return waiters.stats().subscriber_connections == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "a waiter learns the holder's TTL and does not poll meanwhile") {
        auto owner = make_client();
        auto waiter = make_client();
        redlock::lock_options short_ttl;
        short_ttl.ttl = 800ms;
        auto held = owner.acquire("ledger", short_ttl);  // never released: its TTL ends it
        REQUIRE(held);
        redlock::lock_options wait;
        wait.max_wait = 5s;
        const auto start = steady::now();

        auto granted = waiter.acquire("ledger", wait);

        const auto took = steady::now() - start;
        REQUIRE(granted);
        CHECK(took >= 600ms);  // it waited for the holder's keys to expire...
        // ...and came right after (generous bound, short of max_wait)
        CHECK(took < 800ms + redlock_test::scaled_within(1000ms, 3500ms));
        // A poller at retry.delay (50 ms here) would make about 16 attempts in 800 ms. The
        // waiter makes a few: one, a short re-check or two until its fresh client's
        // subscriptions are confirmed, and one when the holder's keys expire.
        CHECK(waiter.stats().attempts <= 6);
    }

    TEST_CASE_FIXTURE(cluster,
                      "fair mode grants in arrival order, and a newcomer does not overtake") {
        auto owner = make_client();
        auto held = owner.acquire("ledger");
        REQUIRE(held);
        std::mutex mutex;
        std::vector<int> order;
        std::vector<redlock::client> clients;
        for (int i = 0; i < 4; ++i) clients.push_back(make_client());
        const auto queued = [&](long long n) {
            return redlock_test::wait_until(redlock_test::scaled(3s), [&] {
                int nodes_with_n = 0;
                for (const auto& server : *this) {
                    if (server.command({"ZCARD", "redlock-queue:{ledger}"}) == std::to_string(n))
                        ++nodes_with_n;
                }
                return nodes_with_n == 5;
            });
        };
        std::vector<std::thread> threads;
        const auto arrive = [&](int who) {
            threads.emplace_back([&, who] {
                redlock::lock_options fair;
                fair.wait = redlock::wait_mode::fair;
                fair.max_wait = 20s;
                auto l = clients[static_cast<std::size_t>(who)].acquire("ledger", fair);
                if (!l) return;
                {
                    std::lock_guard guard{mutex};
                    order.push_back(who);
                }
                std::this_thread::sleep_for(20ms);  // the critical section
                (void)clients[static_cast<std::size_t>(who)].release(*l);
            });
        };

        for (int who = 0; who < 3; ++who) {
            arrive(who);
            REQUIRE(queued(who + 1));  // each is queued before the next arrives
        }
        REQUIRE(owner.release(*held));
        arrive(3);  // the newcomer arrives as the queue starts moving
        for (auto& t : threads) t.join();

        CHECK(order == std::vector<int>{0, 1, 2, 3});
    }

    TEST_CASE_FIXTURE(
        cluster,
        "a SIGKILLed holder's lock passes to the next waiter within its TTL and a small bound") {
        const std::string config_file =
            "/tmp/redlock-tests/holder-" + std::to_string(::getpid()) + ".json";
        {
            std::ofstream out{config_file};
            out << R"({"nodes": [)";
            for (std::size_t i = 0; i < size(); ++i) {
                out << (i ? "," : "") << R"({"host": "127.0.0.1", "port": )"
                    << node(static_cast<int>(i)).port() << "}";
            }
            out << "]}";
        }
        int pipe_fds[2];
        REQUIRE(::pipe(pipe_fds) == 0);
        const pid_t holder = ::fork();
        if (holder == 0) {
            ::dup2(pipe_fds[1], 1);
            ::execl(REDLOCK_TEST_HOLDER, REDLOCK_TEST_HOLDER, config_file.c_str(), "ledger", "1000",
                    static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(pipe_fds[1]);
        char line[128] = {};
        REQUIRE(::read(pipe_fds[0], line, sizeof line - 1) > 0);  // "held <value>"
        ::close(pipe_fds[0]);
        REQUIRE(std::string{line}.starts_with("held "));
        auto waiter = make_client();
        std::atomic<bool> got{false};
        steady::time_point granted_at{};
        redlock::lock_options wait;
        wait.max_wait = 10s;
        waiter.acquire_async("ledger", wait, [&](redlock::result<redlock::lock> r) {
            granted_at = steady::now();
            got = r.has_value();
        });
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s),
                                         [&] { return waiter.stats().waiters == 1; }));
        const long long commands_before = commands_executed(*this);
        const auto killed_at = steady::now();

        ::kill(holder, SIGKILL);
        ::waitpid(holder, nullptr, 0);

        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] { return got.load(); }));
        const auto took = granted_at - killed_at;
        const long long spent = commands_executed(*this) - commands_before;
        MESSAGE("granted " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                           << " ms after the kill; " << spent << " commands meanwhile");
        CHECK(took < 1000ms + redlock_test::scaled(500ms));  // the holder's TTL plus a small bound
        CHECK(spent < 60);                                   // a few re-checks, not a poll loop
        std::remove(config_file.c_str());
    }
}
