// Every user callback, the logger included, may throw: the library reports the
// throw on stderr, ignores it and carries on. A throw must never reach libuv's C
// frames or a noexcept path of ours, where it would end the host process in
// std::terminate (a logger's second throw, from a node connection's warning on
// the loop thread, once did). Against five real redis-server processes.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>
#include <redlock/session.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// Throws a std::exception on odd calls and something else on even ones: both
/// kinds must be caught.
void throw_on_purpose(std::atomic<int>& calls) {
    if (calls.fetch_add(1) % 2 == 0) throw std::runtime_error{"thrown by the test on purpose"};
    throw 42;
}

}  // namespace

TEST_SUITE("callbacks") {
    TEST_CASE_FIXTURE(cluster,
                      "a logger that throws, again and again, from the loop thread's node "
                      "warnings, leaves the process and the client working") {
        std::atomic<int> logged{0};
        auto settings = config();
        settings.logger = [&](redlock::log_level, std::string_view) { throw_on_purpose(logged); };
        auto locks = make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        // A dead node and a restarted one: each connection logs from the loop thread
        // (unreachable, reconnect attempts, a new run_id).
        node(4).crash();
        node(3).restart();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(10s),
                                         [&] { return logged.load() >= 4; }));
        for (int i = 0; i < 5; ++i) {
            auto held = locks.acquire("throwing:logger");
            REQUIRE(held);
            CHECK(locks.release(*held));
        }
    }

    TEST_CASE_FIXTURE(cluster, "an on_lost that throws is ignored, and the client goes on") {
        auto locks = make_client();
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        std::atomic<int> lost_calls{0};
        redlock::lock_options renewed;
        renewed.ttl = 1500ms;
        renewed.auto_renew = true;
        renewed.on_lost = [&](const redlock::lock&, const redlock::error&) {
            throw_on_purpose(lost_calls);
        };
        auto held = locks.acquire("throwing:on_lost", renewed);
        REQUIRE(held);
        const std::string key = key_of("throwing:on_lost");
        for (std::size_t i : {0U, 1U, 2U})
            (void)node(i).command({"SET", key, "someone-else", "PX", "20000"});
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return lost_calls.load() == 1; }));
        CHECK(held->lost());
        auto other = locks.acquire("throwing:after");
        REQUIRE(other);
        CHECK(locks.release(*other));
    }

    TEST_CASE_FIXTURE(cluster,
                      "a session's on_lost that throws is ignored, and the client goes on") {
        auto settings = config();
        settings.request_timeout = 1000ms;
        auto locks = make_client(settings);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return locks.stats().nodes_connected == 5; }));
        std::atomic<int> lost_calls{0};
        redlock::session_options options{.ttl = 1000ms};
        options.on_lost = [&](const redlock::session_loss&) { throw_on_purpose(lost_calls); };
        auto s = locks.open_session(std::move(options));
        REQUIRE(s);
        redlock::lock_options in_session;
        in_session.session = *s;
        auto held = locks.acquire("throwing:session", in_session);
        REQUIRE(held);
        for (std::size_t i = 0; i < 3; ++i) node(i).freeze();
        const bool told = redlock_test::wait_until(redlock_test::scaled(10s),
                                                   [&] { return lost_calls.load() == 1; });
        for (std::size_t i = 0; i < 3; ++i) node(i).thaw();
        REQUIRE(told);
        CHECK(s->lost());
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            auto other = locks.acquire("throwing:after-session");
            return other && locks.release(*other).has_value();
        }));
    }

    TEST_CASE_FIXTURE(cluster, "an observer's on_change that throws is ignored, and it goes on") {
        auto watcher = make_client();
        auto leader = make_client();
        std::atomic<int> changes{0};
        auto observing = watcher.observe(
            "throwing:svc", [&](const redlock::election_view&) { throw_on_purpose(changes); });
        REQUIRE(observing);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return changes.load() >= 1; }));
        auto won = leader.campaign("throwing:svc", "alpha");
        REQUIRE(won);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return changes.load() >= 2; }));
        REQUIRE(won->proclaim("alpha2"));
        // Told again after two throws: the observer still runs.
        CHECK(redlock_test::wait_until(redlock_test::scaled(5s),
                                       [&] { return changes.load() >= 3; }));
    }
}
