// Sessions (issue 28, item 3), against five real servers: 1,000 locks kept by
// one renewal round per tick (two script calls per node), every lock lost with
// one signal when the client is cut off, a lock missing on a minority put back,
// a lock broken on its own lost on its own, and a close that releases all; a
// round's calls sent to each node one at a time, and a close's releases a bounded
// number at a time.
#include "support/cluster.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;

namespace {

/// A client whose requests have room for a round of a thousand keys, even
/// under a sanitizer.
auto session_client(const cluster& c) -> redlock::client {
    auto settings = c.config();
    settings.request_timeout = 1000ms;
    return c.make_client(settings);
}

auto in(const redlock::session& s) -> redlock::lock_options {
    redlock::lock_options o;
    o.attempts = 1;
    o.session = s;
    return o;
}

/// Acquires `count` locks "<prefix><i>" in `s` at once; all must be granted.
auto acquire_many(redlock::client& locks, const redlock::session& s, const std::string& prefix,
                  std::size_t count) -> std::vector<redlock::lock> {
    std::vector<redlock::lock> held(count);
    std::mutex mutex;
    std::atomic<std::size_t> failed{0};
    redlock_test::countdown done{count};
    for (std::size_t i = 0; i < count; ++i) {
        locks.acquire_async(prefix + std::to_string(i), in(s),
                            [&, i](redlock::result<redlock::lock> r) {
                                if (r) {
                                    std::lock_guard guard{mutex};
                                    held[i] = *r;
                                } else {
                                    failed.fetch_add(1);
                                }
                                done.count_down();
                            });
    }
    REQUIRE(done.wait_for(redlock_test::scaled(60s)));
    REQUIRE(failed.load() == 0);
    return held;
}

}  // namespace

TEST_SUITE("sessions") {
    TEST_CASE_FIXTURE(cluster,
                      "a thousand locks survive renewals at two script calls per node per tick") {
        auto locks = session_client(*this);
        auto s = locks.open_session({.ttl = 1500ms});
        REQUIRE(s);
        const auto held = acquire_many(locks, *s, "s:many:", 1000);
        CHECK(s->size() == 1000);
        const auto before = locks.stats();
        // Two TTLs: without renewals every lock would have expired.
        const auto until = std::chrono::steady_clock::now() + 3000ms;
        bool all_valid = true;
        while (std::chrono::steady_clock::now() < until) {
            for (const auto& l : held) all_valid = all_valid && l.valid();
            std::this_thread::sleep_for(50ms);
        }
        CHECK(all_valid);
        const auto after = locks.stats();
        const auto rounds = (after.renewals - before.renewals) / 1000;
        INFO("renewals " << after.renewals - before.renewals << ", requests "
                         << after.requests - before.requests);
        CHECK(rounds >= 4);  // a tick every 500 ms
        // Two script calls per node per round, of at most 512 keys each (per-lock
        // renewal: 1,000 extends and as many TIMEs per node). The snapshots may each fall
        // inside a round, whose calls are then counted without all of its renewals: a
        // round more at either end.
        CHECK(after.requests - before.requests <= (rounds + 2) * 2 * 5);
        std::size_t on_majority = 0;
        for (const auto& l : held)
            on_majority += count_holding(key_of(l.resource()), l.value()) >= 3;
        CHECK(on_majority == 1000);
        const auto closed = locks.close_session(*s);
        REQUIRE(closed);
        CHECK(closed->locks == 1000);
        CHECK(closed->released == 1000);
        // Each release returns once a majority deleted: the other nodes' deletes may still be
        // on their way. Gone well before the TTL the last round gave (1 s left at least), so
        // deleted, not expired.
        CHECK(redlock_test::wait_until(redlock_test::scaled_within(500ms, 900ms),
                                       [&] { return total_keys() == 0; }));
    }

    TEST_CASE_FIXTURE(cluster,
                      "a round's calls go to a node one at a time: a frozen node gets the first "
                      "only, and a close keeps a bounded number of releases in flight") {
        auto settings = config();
        settings.request_timeout = 300ms;
        auto locks = make_client(settings);
        auto s = locks.open_session({.ttl = 3000ms});  // a round every second
        REQUIRE(s);
        constexpr std::size_t count = 1100;  // three calls per node: 512, 512 and 76 locks
        const auto held = acquire_many(locks, *s, "s:parts:", count);
        const auto round_ends = [&](std::uint64_t renewals) {
            return redlock_test::wait_until(redlock_test::scaled(5s),
                                            [&] { return locks.stats().renewals >= renewals; });
        };
        // A round has just ended: the next goes out about a second later.
        REQUIRE(round_ends(locks.stats().renewals + count));
        const auto before = locks.stats();
        node(4).freeze();
        // That next round ends once node 4's first call has timed out: the healthy
        // nodes got all three calls, one after another; node 4 the first only (sent
        // together, all three would have waited in its socket and timed out).
        REQUIRE(round_ends(before.renewals + count));
        const auto after = locks.stats();
        node(4).thaw();
        INFO("requests " << after.requests - before.requests << ", timeouts "
                         << after.timeouts - before.timeouts);
        CHECK(after.timeouts - before.timeouts == 1);
        CHECK(after.requests - before.requests == 4 * 3 + 1);
        for (const auto& l : held) REQUIRE(l.valid());

        // Closing: a release per lock, at most 64 at a time (each waited behind all
        // the others when sent at once). Decided releases may still await their last
        // nodes' replies: an idle run sees up to twice 64 operations, and the renewal's.
        // Those waits end on timers, which run late on a busy machine (162 once, with both
        // cores taken): the bound is what tells a window from all 1,100 sent at once.
        std::atomic<bool> closed{false};
        redlock::result<redlock::session_close_report> report{redlock::session_close_report{}};
        locks.close_session_async(*s, [&](redlock::result<redlock::session_close_report> r) {
            report = std::move(r);
            closed = true;
        });
        std::size_t most = 0;
        const auto until = std::chrono::steady_clock::now() + 30s;
        while (!closed.load() && std::chrono::steady_clock::now() < until)
            most = std::max(most, locks.stats().operations);
        REQUIRE(closed.load());
        REQUIRE(report);
        CHECK(report->locks == count);
        CHECK(report->released == count);
        CHECK(most >= 1);
        CHECK(most < count / 2);
        // Short of the 2 s left at least to the keys by the last round: deleted, not expired.
        CHECK(redlock_test::wait_until(redlock_test::scaled_within(1500ms, 1900ms),
                                       [&] { return total_keys() == 0; }));
    }

    TEST_CASE_FIXTURE(cluster, "a client cut off loses every lock of the session with one signal") {
        auto locks = session_client(*this);
        std::atomic<int> signals{0};
        std::mutex mutex;
        redlock::session_loss told;
        redlock::session_options options{.ttl = 1000ms};
        options.on_lost = [&](const redlock::session_loss& loss) {
            std::lock_guard guard{mutex};
            told = loss;
            signals.fetch_add(1);
        };
        auto s = locks.open_session(std::move(options));
        REQUIRE(s);
        const auto held = acquire_many(locks, *s, "s:cut:", 50);
        for (std::size_t i = 0; i < 3; ++i) node(i).freeze();
        const auto cut = std::chrono::steady_clock::now();
        REQUIRE(
            redlock_test::wait_until(redlock_test::scaled(5s), [&] { return signals.load() > 0; }));
        const auto took = std::chrono::steady_clock::now() - cut;
        for (std::size_t i = 0; i < 3; ++i) node(i).thaw();
        CHECK(s->lost());
        CHECK(s->lost_token().stop_requested());
        // Within the validity the last round gave, plus a round's timeout.
        CHECK(took <= 1000ms + redlock_test::scaled(1000ms));
        for (const auto& l : held) {
            CHECK(l.lost());
            CHECK(l.lost_token().stop_requested());
        }
        CHECK(redlock_test::holds_for(300ms, [&] { return signals.load() == 1; }));
        std::lock_guard guard{mutex};
        CHECK(told.resources.size() == 50);
        CHECK(told.message.find("session " + s->id() + " lost") != std::string::npos);
        // A lost session takes no lock.
        const auto refused = locks.acquire("s:cut:after", in(*s));
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::invalid_argument);
    }

    TEST_CASE_FIXTURE(cluster,
                      "a lock gone from a minority of nodes is put back by the next round") {
        auto locks = session_client(*this);
        auto s = locks.open_session({.ttl = 600ms});
        REQUIRE(s);
        const auto held = acquire_many(locks, *s, "s:repair:", 5);
        const std::string key = key_of(held[2].resource());
        REQUIRE(held_everywhere(held[2].resource(), held[2].value()));
        node(0).command({"DEL", key});
        node(1).command({"DEL", key});
        CHECK(redlock_test::wait_until(redlock_test::scaled(3s),
                                       [&] { return count_holding(key, held[2].value()) == 5; }));
        CHECK(held[2].valid());
        CHECK_FALSE(s->lost());
        (void)locks.close_session(*s);
    }

    TEST_CASE_FIXTURE(cluster, "a lock broken on its own is lost on its own") {
        auto locks = session_client(*this);
        auto s = locks.open_session({.ttl = 600ms});
        REQUIRE(s);
        std::atomic<int> lock_signals{0};
        auto options = in(*s);
        options.on_lost = [&](const redlock::lock&, const redlock::error&) { lock_signals++; };
        auto broken = locks.acquire("s:broken", options);
        REQUIRE(broken);
        const auto kept = acquire_many(locks, *s, "s:kept:", 3);
        REQUIRE(locks.force_release("s:broken", "session test"));
        REQUIRE(redlock_test::wait_until(redlock_test::scaled(3s), [&] { return broken->lost(); }));
        // on_lost comes once the tombstone has said who broke it (one more read).
        CHECK(redlock_test::wait_until(redlock_test::scaled(3s),
                                       [&] { return lock_signals.load() == 1; }));
        CHECK_FALSE(s->lost());
        CHECK(s->size() == 3);
        // The others are still renewed: past their first TTL they are still valid.
        REQUIRE(redlock_test::holds_for(900ms, [&] { return kept[0].valid() && kept[2].valid(); }));
        (void)locks.close_session(*s);
    }

    TEST_CASE_FIXTURE(cluster, "a released lock leaves its session and is not put back") {
        auto locks = session_client(*this);
        auto s = locks.open_session({.ttl = 600ms});
        REQUIRE(s);
        const auto held = acquire_many(locks, *s, "s:leave:", 3);
        REQUIRE(locks.release(held[1]));
        CHECK(s->size() == 2);
        CHECK(redlock_test::holds_for(900ms,
                                      [&] { return count_holding(key_of("s:leave:1")) == 0; }));
        CHECK(held[0].valid());
        const auto closed = locks.close_session(*s);
        REQUIRE(closed);
        CHECK(closed->locks == 2);
        CHECK(closed->released == 2);
        CHECK(s->closed());
        const auto refused = locks.acquire("s:leave:after", in(*s));
        REQUIRE_FALSE(refused);
        CHECK(refused.error().message.find("was closed") != std::string::npos);
    }

    TEST_CASE_FIXTURE(cluster, "what a session cannot hold is refused, naming why") {
        auto locks = session_client(*this);
        auto s = locks.open_session({.ttl = 600ms});
        REQUIRE(s);
        auto reader = in(*s);
        reader.shared = true;
        const auto r = locks.acquire("s:bad", reader);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == redlock::errc::invalid_argument);
        CHECK(r.error().message.find("exclusive locks only") != std::string::npos);
        auto other_ttl = in(*s);
        other_ttl.ttl = 5000ms;
        const auto t = locks.acquire("s:bad", other_ttl);
        REQUIRE_FALSE(t);
        CHECK(t.error().message.find("takes its TTL") != std::string::npos);
        const auto zero = locks.open_session({.ttl = 0ms});
        REQUIRE_FALSE(zero);
        CHECK(zero.error().code == redlock::errc::invalid_argument);
    }
}
