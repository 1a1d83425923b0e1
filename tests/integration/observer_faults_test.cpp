// client::observe under a partition (README "Leader election"): a leader that crashes publishes
// nothing, so the observer learns of its end by reading at the leader's validity end. When that
// read cannot reach a majority, the observer must read again later rather than name the crashed
// leader until some other change happens. Five real redis-server processes; the observer
// reaches them through fault proxies.
#include "support/cluster.hpp"
#include "support/fault_proxy.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

/// The views an observer was told, awaited from the test thread.
class told_views {
public:
    auto callback() -> std::function<void(const redlock::election_view&)> {
        return [this](const redlock::election_view& v) {
            const std::lock_guard hold{mutex_};
            views_.push_back(v);
            at_.push_back(std::chrono::steady_clock::now());
            changed_.notify_all();
        };
    }
    /// Waits (scaled(limit) at most) until the last view told satisfies `p`; when it was
    /// told, or nullopt.
    template <class P>
    auto await_last(P p, std::chrono::milliseconds limit)
        -> std::optional<std::chrono::steady_clock::time_point> {
        std::unique_lock hold{mutex_};
        if (!changed_.wait_for(hold, redlock_test::scaled(limit),
                               [&] { return !views_.empty() && p(views_.back()); }))
            return std::nullopt;
        return at_.back();
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<redlock::election_view> views_;
    std::vector<std::chrono::steady_clock::time_point> at_;
};

}  // namespace

TEST_SUITE("election") {
    TEST_CASE_FIXTURE(redlock_test::cluster,
                      "an observer cut off from a majority when a crashed leader's validity "
                      "ends reads again, and reports no leader once it can") {
        // The observer and the leader reach the nodes through proxies of their own.
        std::vector<redlock_test::fault_proxy> seen_through;
        std::vector<redlock_test::fault_proxy> led_through;
        std::vector<redlock::node_address> watcher_nodes;
        std::vector<redlock::node_address> leader_nodes;
        for (auto& server : *this) {
            seen_through.emplace_back(server.port());
            watcher_nodes.push_back(seen_through.back().address());
            led_through.emplace_back(server.port());
            leader_nodes.push_back(led_through.back().address());
        }
        const auto watcher_settings = redlock_test::fixture_config(watcher_nodes);
        auto watcher = make_client(watcher_settings);
        auto leader_client = make_client(redlock_test::fixture_config(leader_nodes));
        told_views told;
        auto observing = watcher.observe("svc", told.callback());
        REQUIRE(observing);
        REQUIRE(told.await_last([](const auto& v) { return !v.leader; }, 5s));
        redlock::campaign_options options;
        options.ttl = 1000ms;
        auto won = leader_client.campaign("svc", "doomed", options);
        REQUIRE(won);
        std::optional<std::chrono::milliseconds> validity;
        const auto led_at = told.await_last(
            [&](const auto& v) {
                if (!v.leader || v.leader->term != won->term()) return false;
                validity = v.leader->validity;
                return true;
            },
            3s);
        REQUIRE(led_at);

        // The leader as good as crashes (cut off from every node: no renewal, no word of its
        // loss), and the observer is cut off from three nodes.
        for (auto& p : led_through) p.blackhole();
        for (std::size_t i = 0; i < 3; ++i) seen_through[i].blackhole();
        // The lock expires everywhere; the observer reads at the validity it was told (+10 ms),
        // and that read times out (request_timeout) on the three nodes.
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(5s),
                                         [&] { return count_holding(key_of("svc")) == 0; }));
        std::this_thread::sleep_until(*led_at + *validity + 10ms +
                                      watcher_settings.request_timeout +
                                      redlock_test::scaled(300ms));
        for (auto& p : seen_through) p.heal();
        // Nothing else happens in the election: only a read of its own tells the observer.
        CHECK(told.await_last([](const auto& v) { return !v.leader; }, 5s));
        for (auto& p : led_through) p.heal();
    }
}
