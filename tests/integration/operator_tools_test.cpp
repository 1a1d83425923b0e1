// The operators' tools (issue 26, items 3 and 6): an audited break of whatever holds a
// resource, its audit log read back from a majority, the broken holder told why, and
// Chubby's sequencer check. Real servers.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

auto named(std::string holder) -> redlock::lock_options {
    redlock::lock_options o;
    o.attempts = 1;
    o.holder = std::move(holder);
    return o;
}

auto breaker(std::string who) -> redlock::force_release_options {
    redlock::force_release_options o;
    o.breaker = std::move(who);
    return o;
}

}  // namespace

TEST_SUITE("operator tools") {
    TEST_CASE_FIXTURE(cluster,
                      "a break frees the resource, names the holder, is audited, and the holder's "
                      "renewal is told who broke it and why") {
        auto locks = make_client();
        std::mutex m;
        std::optional<std::string> lost_message;
        auto options = named("build-7:4411 (nightly-report)");
        options.ttl = 1500ms;
        options.auto_renew = true;
        options.fencing = true;
        options.on_lost = [&](const redlock::lock&, const redlock::error& why) {
            const std::lock_guard held{m};
            lost_message = why.message;
        };
        const auto held = locks.acquire("op:stuck", options);
        REQUIRE(held);
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
            return count_holding(key_of("op:stuck"), held->value()) == 5;
        }));

        auto ops = make_client();
        const auto report = ops.force_release("op:stuck", "deploy hung for 2 h", breaker("alice"));
        REQUIRE(report);
        CHECK(report->majority());
        CHECK(report->broken_on == 5);
        REQUIRE(report->broken.size() == 1);
        CHECK(report->broken.front().kind == "writer");
        CHECK(report->broken.front().value == held->value());
        CHECK(report->broken.front().holder == "build-7:4411 (nightly-report)");
        CHECK(report->broken.front().nodes == 5);
        CHECK(count_holding(key_of("op:stuck")) == 0);
        CHECK(ops.acquire("op:stuck", named("next")));

        // The holder's next renewal finds the lock gone, and says why.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] { return held->lost(); }));
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            const std::lock_guard g{m};
            return lost_message.has_value();
        }));
        CAPTURE(*lost_message);
        CHECK(lost_message->starts_with("broken by alice: deploy hung for 2 h; "));

        const auto log = ops.audit("op:stuck");
        REQUIRE(log);
        REQUIRE(log->entries.size() == 1);
        const auto& e = log->entries.front();
        CHECK(e.breaker == "alice");
        CHECK(e.reason == "deploy hung for 2 h");
        CHECK(e.kind == "writer");
        CHECK(e.value == held->value());
        CHECK(e.holder == "build-7:4411 (nightly-report)");
        CHECK(e.fence == held->fence());
        CHECK(e.nodes == 5);
        CHECK(log->minority.empty());
    }

    TEST_CASE_FIXTURE(cluster, "a break deletes readers and, when told the count, permits") {
        auto locks = make_client();
        auto reader = named("reader one");
        reader.shared = true;
        const auto r1 = locks.acquire("op:rw", reader);
        reader.holder = "reader two";
        const auto r2 = locks.acquire("op:rw", reader);
        REQUIRE(r1);
        REQUIRE(r2);
        auto permit = named("permit holder");
        permit.permits = 3;
        const auto p = locks.acquire("op:sem", permit);
        REQUIRE(p);

        const auto readers = locks.force_release("op:rw", "maintenance");
        REQUIRE(readers);
        REQUIRE(readers->broken.size() == 2);
        for (const auto& h : readers->broken) {
            CHECK(h.kind == "reader");
            CHECK(h.nodes >= 3);  // a majority at least: acquire returns at a majority
        }
        auto writer = named("writer");
        CHECK(make_client().acquire("op:rw", writer));

        // Without the count, a semaphore's permits are not touched.
        const auto untouched = locks.force_release("op:sem", "maintenance");
        REQUIRE(untouched);
        CHECK(untouched->broken.empty());
        redlock::force_release_options with_count;
        with_count.permits = 3;
        const auto permits = locks.force_release("op:sem", "maintenance", with_count);
        REQUIRE(permits);
        REQUIRE(permits->broken.size() == 1);
        CHECK(permits->broken.front().kind == "permit");
        CHECK(permits->broken.front().permit == p->permit());
        CHECK(permits->broken.front().holder == "permit holder");
        const auto log = locks.audit("op:sem");
        REQUIRE(log);
        REQUIRE(log->entries.size() == 2);  // newest first: the permit, then "none"
        CHECK(log->entries.front().kind == "permit " + std::to_string(*p->permit()));
        CHECK(log->entries.back().kind == "none");
    }

    TEST_CASE_FIXTURE(cluster, "a break without a reason, or with a bad breaker, is refused") {
        auto locks = make_client();
        const auto held = locks.acquire("op:keep", named("keeper"));
        REQUIRE(held);
        const auto no_reason = locks.force_release("op:keep", "");
        REQUIRE_FALSE(no_reason);
        CHECK(no_reason.error().code == redlock::errc::invalid_argument);
        CHECK(no_reason.error().message.find("reason") != std::string::npos);
        const auto bad = locks.force_release("op:keep", "why", breaker("two\nlines"));
        REQUIRE_FALSE(bad);
        CHECK(bad.error().message.starts_with("breaker: "));
        CHECK(count_holding(key_of("op:keep"), held->value()) >= 3);
    }

    TEST_CASE_FIXTURE(cluster, "a break that reaches a minority says so, and is audited apart") {
        auto locks = make_client();
        const auto held = locks.acquire("op:minority", named("holder"));
        REQUIRE(held);
        for (std::size_t i : {0U, 1U, 2U}) node(i).freeze();
        auto settings = config();
        settings.request_timeout = redlock_test::scaled(200ms);
        auto ops = make_client(settings);
        const auto report = ops.force_release("op:minority", "try");
        for (std::size_t i : {0U, 1U, 2U}) node(i).thaw();
        REQUIRE(report);
        CHECK_FALSE(report->majority());
        CHECK(report->broken_on == 2);
        const auto log = ops.audit("op:minority");
        REQUIRE(log);
        CHECK(log->entries.empty());
        REQUIRE(log->minority.size() == 1);
        CHECK(log->minority.front().nodes == 2);
    }

    TEST_CASE_FIXTURE(cluster, "check_fence: current while held, stale after a later holder") {
        auto locks = make_client();
        auto fenced = named("first");
        fenced.fencing = true;
        const auto first = locks.acquire("op:fence", fenced);
        REQUIRE(first);
        REQUIRE(first->fence());
        const std::uint64_t token = *first->fence();

        const auto now = locks.check_fence("op:fence", token);
        REQUIRE(now);
        CHECK(now->current);
        CHECK(now->holder == first->value());
        CHECK(now->nodes.size() == 5);
        const auto wrong = locks.check_fence("op:fence", token - 1);
        REQUIRE(wrong);
        CHECK_FALSE(wrong->current);
        CHECK(wrong->reason.find("stale") != std::string::npos);

        REQUIRE(locks.release(*first));
        const auto released = locks.check_fence("op:fence", token);
        REQUIRE(released);
        CHECK_FALSE(released->current);
        CHECK(released->reason.find("no majority holds") != std::string::npos);

        const auto second = locks.acquire("op:fence", fenced);
        REQUIRE(second);
        const auto stale = locks.check_fence("op:fence", token);
        REQUIRE(stale);
        CHECK_FALSE(stale->current);
        CHECK(stale->highest == second->fence());
        CHECK(locks.check_fence("op:fence", *second->fence())->current);
    }

    TEST_CASE_FIXTURE(cluster, "the audit of every resource lists each break, newest first") {
        auto locks = make_client();
        REQUIRE(locks.acquire("op:all-a", named("a holder")));
        REQUIRE(locks.acquire("op:all-b", named("b holder")));
        REQUIRE(locks.force_release("op:all-a", "first", breaker("ops"))->majority());
        std::this_thread::sleep_for(5ms);  // distinct break times (ms), for the order checked
        REQUIRE(locks.force_release("op:all-b", "second", breaker("ops"))->majority());

        const auto all = locks.audit("");
        REQUIRE(all);
        CHECK(all->resource.empty());
        REQUIRE(all->entries.size() >= 2);
        CHECK(all->entries[0].resource == "op:all-b");
        CHECK(all->entries[0].reason == "second");
        CHECK(all->entries[0].holder == "b holder");
        CHECK(all->entries[1].resource == "op:all-a");
        CHECK(all->entries[1].reason == "first");
        const auto one = locks.audit("op:all-a");
        REQUIRE(one);
        REQUIRE(one->entries.size() == 1);
        CHECK(one->entries.front().resource == "op:all-a");
        // A break of nothing anywhere is audited per resource, and indexed too.
        REQUIRE(locks.force_release("op:all-free", "check", breaker("ops")));
        const auto again = locks.audit("");
        REQUIRE(again);
        CHECK(again->entries.front().resource == "op:all-free");
        CHECK(again->entries.front().kind == "none");
    }
}
