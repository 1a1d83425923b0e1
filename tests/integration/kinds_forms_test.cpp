// Every form of the API takes every lock kind: the async form with its
// callback, the guard that releases on scope exit, and a stop token that
// cancels a waiting reader. Against five real redis-server processes.
#include "support/cluster.hpp"
#include "support/lock_kinds.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <future>
#include <stop_token>
#include <thread>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::scaled;
using redlock_test::wait_until;

TEST_CASE(
    "acquire_async hands out a reader and a permit, on the loop thread, never inside the call") {
    cluster nodes;
    auto c = nodes.make_client();
    const auto caller = std::this_thread::get_id();
    std::promise<redlock::result<redlock::lock>> reader;
    std::promise<redlock::result<redlock::lock>> permit;
    std::promise<bool> on_other_thread;
    c.acquire_async("doc", redlock_test::reader_options(), [&](redlock::result<redlock::lock> r) {
        on_other_thread.set_value(std::this_thread::get_id() != caller);
        reader.set_value(std::move(r));
    });
    c.acquire_async("pool", redlock_test::permit_options(2),
                    [&](redlock::result<redlock::lock> r) { permit.set_value(std::move(r)); });
    CHECK(on_other_thread.get_future().get());
    auto r = reader.get_future().get();
    auto p = permit.get_future().get();
    REQUIRE(r);
    REQUIRE(p);
    CHECK(r->kind() == redlock::lock_kind::shared);
    CHECK(p->kind() == redlock::lock_kind::permit);
    std::promise<redlock::result<redlock::release_report>> released;
    c.release_async(*p, [&](redlock::result<redlock::release_report> rr) {
        released.set_value(std::move(rr));
    });
    auto report = released.get_future().get();
    REQUIRE(report);
    CHECK(report->majority());
    REQUIRE(c.release(*r));
}

TEST_CASE("a guard releases a reader and a permit when it goes out of scope") {
    cluster nodes;
    auto c = nodes.make_client();
    {
        auto r = c.acquire("doc", redlock_test::reader_options(20000ms));
        REQUIRE(r);
        redlock::guard g{c, *r};
        auto p = c.acquire("pool", redlock_test::permit_options(1));
        REQUIRE(p);
        redlock::guard h{c, *p};
        CHECK_FALSE(c.acquire("doc", redlock_test::writer_options()));
        CHECK_FALSE(c.acquire("pool", redlock_test::permit_options(1)));
    }
    // The guards' releases run in the background: a writer and a new permit get
    // in once they have landed, long before the 20 s TTL.
    CHECK(wait_until(scaled(5s), [&] {
        auto w = c.acquire("doc", redlock_test::writer_options());
        if (w) (void)c.release(*w);
        return static_cast<bool>(w);
    }));
    CHECK(wait_until(scaled(5s), [&] {
        auto p = c.acquire("pool", redlock_test::permit_options(1));
        if (p) (void)c.release(*p);
        return static_cast<bool>(p);
    }));
}

TEST_CASE("a stop request cancels a reader waiting for a writer") {
    cluster nodes;
    auto c = nodes.make_client();
    auto w = c.acquire("doc", redlock_test::writer_options(20000ms));
    REQUIRE(w);
    std::stop_source stop;
    auto waiting = std::async(std::launch::async, [&] {
        return c.acquire("doc", redlock_test::waiting(redlock_test::reader_options(), 15000ms),
                         stop.get_token());
    });
    REQUIRE(wait_until(scaled(5s), [&] { return c.stats().waiters == 1; }));
    const auto asked = std::chrono::steady_clock::now();
    stop.request_stop();
    auto r = waiting.get();
    REQUIRE_FALSE(r);
    CHECK(r.error().code == redlock::errc::cancelled);
    CHECK(std::chrono::steady_clock::now() - asked < scaled(2000ms));  // not its max_wait
    REQUIRE(c.release(*w));
    CHECK(wait_until(scaled(5s), [&] { return nodes.total_keys() == 0; }));
}
