// Leader election (client::campaign, leader, observe; README "Leader election")
// against five real redis-server processes: succession in arrival order with
// strictly higher terms, after a resignation and after a leader's client goes
// away without one; proclamations; a deposed leader's proclamation refused;
// and an observer told of each change as it happens.
#include "support/cluster.hpp"
#include "support/command_stats.hpp"
#include "support/election_views.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>
#include <redlock/coro.hpp>

#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::leads;
using redlock_test::view_log;

namespace {

/// A campaign started with campaign_async, awaited later.
struct pending_campaign {
    std::shared_ptr<std::promise<redlock::result<redlock::leadership>>> promise =
        std::make_shared<std::promise<redlock::result<redlock::leadership>>>();
    std::future<redlock::result<redlock::leadership>> future = promise->get_future();
    redlock::client::acquire_ticket ticket = 0;

    pending_campaign(redlock::client& c, const std::string& name, const std::string& proposal,
                     redlock::campaign_options options = {}) {
        ticket = c.campaign_async(
            name, proposal, std::move(options),
            [p = promise](redlock::result<redlock::leadership> r) { p->set_value(std::move(r)); });
    }
    auto ready_within(std::chrono::milliseconds limit) -> bool {
        return future.wait_for(limit) == std::future_status::ready;
    }
};

/// A campaign option set with a TTL.
auto with_ttl(std::chrono::milliseconds ttl) -> redlock::campaign_options {
    redlock::campaign_options o;
    o.ttl = ttl;
    return o;
}

/// Eager coroutine: runs at once, its value in a future.
struct eager_campaign {
    struct promise_type {
        std::promise<redlock::result<redlock::leadership>> out;
        auto get_return_object() -> eager_campaign { return eager_campaign{out.get_future()}; }
        static auto initial_suspend() noexcept -> std::suspend_never { return {}; }
        static auto final_suspend() noexcept -> std::suspend_never { return {}; }
        void return_value(redlock::result<redlock::leadership> v) { out.set_value(std::move(v)); }
        static void unhandled_exception() { std::terminate(); }
    };
    std::future<redlock::result<redlock::leadership>> result;
};

auto campaign_in_coroutine(redlock::client& c, std::string name) -> eager_campaign {
    co_return co_await c.async_campaign(std::move(name), "from a coroutine");
}

}  // namespace

TEST_SUITE("election") {
    TEST_CASE_FIXTURE(cluster,
                      "two candidates: one leads, the other waits, and leads after the "
                      "resignation with a higher term") {
        auto first = make_client();
        auto second = make_client();
        auto won = first.campaign("svc", "alpha");
        REQUIRE(won);
        CHECK(won->valid());
        CHECK(won->term() >= 1);
        CHECK(won->value() == "alpha");

        pending_campaign standby{second, "svc", "beta"};
        CHECK_FALSE(standby.ready_within(300ms));  // waits while the first leads

        // campaign returns once a majority confirmed; the other nodes follow when their
        // replies come (late on a loaded machine), so all five agree soon, not at once.
        auto view = second.leader("svc");
        CHECK(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
            view = second.leader("svc");
            return view && view->leader && view->agreeing == 5;
        }));
        REQUIRE(view);
        REQUIRE(view->leader);
        CHECK(view->leader->value == "alpha");
        CHECK(view->leader->term == won->term());
        CHECK(view->agreeing == 5);

        REQUIRE(won->resign());
        CHECK_FALSE(won->valid());
        REQUIRE(standby.ready_within(redlock_test::scaled(5s)));
        auto next = standby.future.get();
        REQUIRE(next);
        CHECK(next->term() > won->term());
        view = first.leader("svc");
        REQUIRE(view);
        REQUIRE(view->leader);
        CHECK(view->leader->value == "beta");
        CHECK(view->leader->term == next->term());
        REQUIRE(next->resign());
    }

    TEST_CASE_FIXTURE(cluster,
                      "an uncontended campaign is two rounds: the grant, and the fencing "
                      "confirm that is also the first proclamation; resign is one") {
        auto c = make_client();
        REQUIRE(redlock_test::wait_until(
            redlock_test::scaled(5s), [&] { return c.stats().nodes_connected == c.node_count(); }));
        for (const auto& server : *this) REQUIRE(server.command({"CONFIG", "RESETSTAT"}) == "OK");
        auto won = c.campaign("two-rounds", "alpha");
        REQUIRE(won);
        // Every node is sent the wait-acquire and the confirm, both EVALSHA, and no
        // proclamation of its own (EVAL). A slow node may still be working on them.
        for (const auto& server : *this) {
            CHECK(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
                return redlock_test::command_calls(redlock_test::command_stats(server),
                                                   "evalsha") == 2;
            }));
            CHECK(redlock_test::command_calls(redlock_test::command_stats(server), "eval") == 0);
        }
        // And the proposal is the leader's value on a majority when campaign returns.
        auto view = c.leader("two-rounds");
        REQUIRE(view);
        REQUIRE(view->leader);
        CHECK(view->leader->value == "alpha");
        CHECK(view->leader->term == won->term());
        CHECK((*this)[0].command({"HGET", key_of("two-rounds") + "|leader", "seq"}) == "0");

        // resign is one call per node: the abdication rides in the release's script.
        const auto before = c.stats().requests;
        REQUIRE(won->resign());
        CHECK(c.stats().requests - before == c.node_count());
        for (const auto& server : *this) {
            CHECK(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
                return redlock_test::command_calls(redlock_test::command_stats(server),
                                                   "evalsha") == 3;
            }));
            CHECK(redlock_test::command_calls(redlock_test::command_stats(server), "eval") == 0);
            // The leader key is gone with the lock, on every node.
            CHECK(redlock_test::wait_until(redlock_test::scaled(5s), [&] {
                return server.command({"EXISTS", key_of("two-rounds") + "|leader"}) == "0" &&
                       server.command({"EXISTS", key_of("two-rounds")}) == "0";
            }));
        }
        CHECK_FALSE(c.leader("two-rounds")->leader);
    }

    TEST_CASE_FIXTURE(cluster, "candidates lead in arrival order, each with a higher term") {
        auto holder = make_client();
        auto won = holder.campaign("queue", "0");
        REQUIRE(won);
        std::vector<redlock::client> clients;
        for (int i = 0; i < 3; ++i) clients.push_back(make_client());
        std::vector<std::unique_ptr<pending_campaign>> waiting;
        for (int i = 0; i < 3; ++i) {
            waiting.push_back(std::make_unique<pending_campaign>(
                clients[static_cast<std::size_t>(i)], "queue", std::to_string(i + 1)));
            // Each is queued on the nodes before the next arrives.
            REQUIRE(redlock_test::wait_until(redlock_test::scaled(2s), [&] {
                return (*this)[0].command({"ZCARD", queue_key_of("queue")}) ==
                       std::to_string(i + 1);
            }));
        }
        std::uint64_t term = won->term();
        REQUIRE(won->resign());
        for (auto& w : waiting) {
            REQUIRE(w->ready_within(redlock_test::scaled(5s)));
            auto next = w->future.get();
            REQUIRE(next);
            CHECK(next->term() > term);
            term = next->term();
            CHECK(next->value() == std::to_string(&w - &waiting[0] + 1));
            REQUIRE(next->resign());
        }
    }

    TEST_CASE_FIXTURE(cluster,
                      "a leader whose client goes away without resigning is succeeded once its "
                      "TTL has run out, with a higher term") {
        auto second = make_client();
        std::uint64_t first_term = 0;
        std::optional<pending_campaign> standby;
        {
            auto first = make_client();
            auto won = first.campaign("svc", "alpha", with_ttl(800ms));
            REQUIRE(won);
            first_term = won->term();
            standby.emplace(second, "svc", "beta");
            CHECK_FALSE(standby->ready_within(200ms));
        }  // renewals stop with the client; its keys expire by their TTL
        const auto gone = std::chrono::steady_clock::now();
        REQUIRE(standby->ready_within(redlock_test::scaled(5s)));
        auto next = standby->future.get();
        REQUIRE(next);
        CHECK(next->term() > first_term);
        CHECK(redlock_test::elapsed_since(gone) >= 400ms);  // not before the old TTL's end
        auto view = second.leader("svc");
        REQUIRE(view);
        REQUIRE(view->leader);
        CHECK(view->leader->value == "beta");
    }

    TEST_CASE_FIXTURE(cluster, "a proclamation updates the value without a new term") {
        auto c = make_client();
        auto won = c.campaign("svc", "v1");
        REQUIRE(won);
        REQUIRE(won->proclaim("v2"));
        CHECK(won->value() == "v2");
        auto view = c.leader("svc");
        REQUIRE(view);
        REQUIRE(view->leader);
        CHECK(view->leader->value == "v2");
        CHECK(view->leader->term == won->term());
        CHECK(view->leader->proclaimed == 1);
        CHECK(view->highest_term == won->term());
        REQUIRE(won->resign());
        view = c.leader("svc");
        REQUIRE(view);
        CHECK_FALSE(view->leader);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a deposed leader cannot proclaim, and is told it lost the leadership") {
        auto first = make_client();
        auto second = make_client();
        redlock_test::countdown told{1};
        auto options = with_ttl(1500ms);
        options.on_lost = [&told](const redlock::leadership& l, const redlock::error& why) {
            CHECK(l.name() == "svc");
            CHECK(why.code == redlock::errc::lock_lost);
            told.count_down();
        };
        auto won = first.campaign("svc", "alpha", options);
        REQUIRE(won);
        // Taken from it behind its back: its lock deleted on every node.
        for (auto& server : *this) (void)server.command({"DEL", key_of("svc")});
        auto usurper = second.campaign("svc", "beta", with_ttl(10s));
        REQUIRE(usurper);
        CHECK(usurper->term() > won->term());
        auto refused = won->proclaim("alpha again");
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::not_held);
        auto view = first.leader("svc");
        REQUIRE(view);
        REQUIRE(view->leader);
        CHECK(view->leader->value == "beta");
        // Its next renewal finds another holder.
        REQUIRE(told.wait_for(redlock_test::scaled(5s)));
        CHECK(won->lost());
        CHECK(won->lost_token().stop_requested());
        CHECK_FALSE(won->valid());
        view = first.leader("svc");
        REQUIRE(view);
        REQUIRE(view->leader);
        CHECK(view->leader->value == "beta");  // its clean-up left the usurper's key alone
        REQUIRE(usurper->resign());
    }

    TEST_CASE_FIXTURE(cluster, "a campaign waits until cancelled, by ticket or stop token") {
        auto first = make_client();
        auto second = make_client();
        auto won = first.campaign("svc", "alpha");
        REQUIRE(won);
        pending_campaign standby{second, "svc", "beta"};
        CHECK_FALSE(standby.ready_within(200ms));
        second.cancel(standby.ticket);
        REQUIRE(standby.ready_within(redlock_test::scaled(5s)));
        auto outcome = standby.future.get();
        REQUIRE_FALSE(outcome);
        CHECK(outcome.error().code == redlock::errc::cancelled);

        std::stop_source stop;
        auto blocked = std::async(std::launch::async, [&] {
            return second.campaign("svc", "gamma", {}, stop.get_token());
        });
        CHECK(blocked.wait_for(200ms) == std::future_status::timeout);
        stop.request_stop();
        REQUIRE(blocked.wait_for(redlock_test::scaled(5s)) == std::future_status::ready);
        auto stopped = blocked.get();
        REQUIRE_FALSE(stopped);
        CHECK(stopped.error().code == redlock::errc::cancelled);
        REQUIRE(won->resign());
    }

    TEST_CASE_FIXTURE(cluster, "a campaign co_awaited in a coroutine leads") {
        auto c = make_client();
        auto task = campaign_in_coroutine(c, "svc");
        REQUIRE(task.result.wait_for(redlock_test::scaled(5s)) == std::future_status::ready);
        auto won = task.result.get();
        REQUIRE(won);
        CHECK(won->value() == "from a coroutine");
        REQUIRE(won->resign());
    }

    TEST_CASE_FIXTURE(cluster,
                      "an observer is told the current leader, each proclamation, a "
                      "resignation, the next term and a crashed leader's end") {
        auto watcher = make_client();
        auto first = make_client();
        view_log log;
        auto observing = watcher.observe("svc", log.callback());
        REQUIRE(observing);
        // At once: nobody leads yet.
        auto at = log.await(0, [](const auto& v) { return !v.leader; });
        REQUIRE(at);

        // A TTL far beyond the bounds below: what arrives, arrives by message,
        // not by the observer's reread at the leader's validity end.
        auto won = first.campaign("svc", "alpha", with_ttl(20s));
        REQUIRE(won);
        at = log.await(*at + 1, leads("alpha"), redlock_test::scaled(3s));
        REQUIRE(at);
        CHECK(log.at(*at).leader->term == won->term());

        REQUIRE(won->proclaim("alpha2"));
        at = log.await(*at + 1, leads("alpha2"), redlock_test::scaled(3s));
        REQUIRE(at);
        CHECK(log.at(*at).leader->term == won->term());

        REQUIRE(won->resign());
        at = log.await(
            *at + 1, [](const auto& v) { return !v.leader; }, redlock_test::scaled(3s));
        REQUIRE(at);

        std::optional<redlock::leadership> second_won;
        {
            auto second = make_client();
            auto next = second.campaign("svc", "beta", with_ttl(1s));
            REQUIRE(next);
            at = log.await(*at + 1, leads("beta"), redlock_test::scaled(3s));
            REQUIRE(at);
            CHECK(log.at(*at).leader->term > won->term());
        }  // the leader's client gone without a word: its key expires
        at = log.await(
            *at + 1, [](const auto& v) { return !v.leader; }, redlock_test::scaled(5s));
        CHECK(at);

        observing->stop();
        auto quiet = first.campaign("svc", "unseen");
        REQUIRE(quiet);
        CHECK_FALSE(log.await(*at + 1, leads("unseen"), 500ms));
        REQUIRE(quiet->resign());
    }

    TEST_CASE_FIXTURE(cluster, "leader and observe refuse a name that is no lock's") {
        auto c = make_client();
        auto view = c.leader("");
        REQUIRE_FALSE(view);
        CHECK(view.error().code == redlock::errc::invalid_argument);
        auto observing = c.observe("", [](const auto&) {});
        REQUIRE_FALSE(observing);
        CHECK(observing.error().code == redlock::errc::invalid_argument);
        auto won = c.campaign("}bad", "x");
        REQUIRE_FALSE(won);
        CHECK(won.error().code == redlock::errc::invalid_argument);
    }
}
