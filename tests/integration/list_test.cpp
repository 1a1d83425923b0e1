// client::list against five real redis-server processes: writers, readers,
// permits and fencing counters held on a majority; a leftover written on one
// server by hand; the prefix filter (glob characters included); the limit and
// the time budget cutting a listing short; a node down; the options refused;
// and what list and status cost in commands (stats().requests).
#include "support/cluster.hpp"
#include "support/lock_kinds.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock_test::cluster;
using redlock_test::scaled;
using redlock_test::wait_until;

namespace {

constexpr const char* listing_token = "0123456789abcdef0123456789abcdef";

/// Connected everywhere: an acquisition is decided at a majority, and a node a fresh
/// client had not reached yet would never hold its key.
auto listing_ready(redlock::client& c) -> bool {
    return wait_until(scaled(5s), [&] { return c.stats().nodes_connected == 5; });
}

/// acquire returns at quorum: waits until every node holds `key`.
auto listing_everywhere(const cluster& nodes, const std::string& key) -> bool {
    return wait_until(scaled(2s), [&] { return nodes.count_holding(key) == 5; });
}

auto listing_find(const std::vector<redlock::listed_lock>& in, const std::string& resource,
                  const std::string& value) -> const redlock::listed_lock* {
    const auto it = std::ranges::find_if(
        in, [&](const auto& l) { return l.resource == resource && l.value == value; });
    return it == in.end() ? nullptr : &*it;
}

auto listing_exclusive(std::chrono::milliseconds ttl, const char* holder, bool fenced = false)
    -> redlock::lock_options {
    auto o = redlock_test::writer_options(ttl);
    o.holder = holder;
    o.fencing = fenced;
    return o;
}

}  // namespace

TEST_SUITE("list") {
    TEST_CASE_FIXTURE(cluster, "list shows writers, readers, permits and fences, leftovers apart") {
        auto locks = make_client();
        REQUIRE(listing_ready(locks));
        auto deploy = locks.acquire("deploy", listing_exclusive(10000ms, "ci-7:42 (deploy)", true));
        REQUIRE(deploy);
        REQUIRE(deploy->fence());
        auto r1 = locks.acquire("doc", redlock_test::reader_options(10000ms));
        auto r2 = locks.acquire("doc", redlock_test::reader_options(10000ms));
        REQUIRE(r1);
        REQUIRE(r2);
        auto permit_options = redlock_test::permit_options(3);
        permit_options.ttl = 10000ms;
        auto p = locks.acquire("pool", permit_options);
        REQUIRE(p);
        REQUIRE(p->permit());
        // A leftover: a value on one server only, as a failed acquisition leaves it.
        const std::string stray = std::string{listing_token} + "|ghost:1 (crashed)";
        REQUIRE(node(2).command({"SET", key_of("stray"), stray, "PX", "5000"}) == "OK");
        // Not ours: another prefix, and a key of the prefix without a hash tag.
        REQUIRE(node(0).command({"SET", "elsewhere:{x}", "v"}) == "OK");
        REQUIRE(node(0).command({"SET", "redlock:no-tag", "v"}) == "OK");
        REQUIRE(listing_everywhere(*this, key_of("deploy")));
        REQUIRE(listing_everywhere(*this, key_of("doc")));
        REQUIRE(
            listing_everywhere(*this, key_of("pool") + "|permit|" + std::to_string(*p->permit())));
        REQUIRE(wait_until(scaled(2s), [&] {
            return redlock_test::count_reading(*this, key_of("doc"), r2->value()) == 5;
        }));

        const auto listing = locks.list();
        REQUIRE(listing);
        CHECK(listing->complete);
        CHECK(listing->truncated_reason.empty());
        CHECK(listing->quorum == 3);
        CHECK(listing->reachable() == 5);
        REQUIRE(listing->nodes.size() == 5);
        for (const auto& n : listing->nodes) {
            CHECK(n.reachable);
            CHECK(n.complete);
            CHECK(n.detail.empty());
        }
        CHECK(listing->locks.size() == 4);  // the writer, two readers, one permit

        const auto* w = listing_find(listing->locks, "deploy", deploy->value());
        REQUIRE(w);
        CHECK(w->kind == redlock::lock_kind::exclusive);
        CHECK(w->holder == "ci-7:42 (deploy)");
        CHECK(w->held_on.size() == 5);
        CHECK(w->fence == deploy->fence());
        REQUIRE(w->expires_in);
        CHECK(*w->expires_in <= 10000ms);
        CHECK(*w->expires_in > 5000ms);

        for (const auto* reader : {&*r1, &*r2}) {
            const auto* r = listing_find(listing->locks, "doc", reader->value());
            REQUIRE(r);
            CHECK(r->kind == redlock::lock_kind::shared);
            CHECK(r->held_on.size() == 5);
            REQUIRE(r->expires_in);
            CHECK(*r->expires_in <= 10000ms);
        }
        // The readers' marker is no holder.
        CHECK(listing_find(listing->locks, "doc", "~readers") == nullptr);

        const auto* permit = listing_find(listing->locks, "pool", p->value());
        REQUIRE(permit);
        CHECK(permit->kind == redlock::lock_kind::permit);
        CHECK(permit->permit == p->permit());
        CHECK(permit->permits == 3);

        REQUIRE(listing->leftovers.size() == 1);
        const auto& left = listing->leftovers.front();
        CHECK(left.resource == "stray");
        CHECK(left.holder == "ghost:1 (crashed)");
        CHECK(left.held_on == std::vector<std::string>{listing->nodes[2].node});
        REQUIRE(left.expires_in);
        CHECK(*left.expires_in <= 5000ms);

        // Released: gone from the listing.
        REQUIRE(locks.release(*deploy));
        REQUIRE(wait_until(scaled(2s), [&] { return count_holding(key_of("deploy")) == 0; }));
        const auto after = locks.list();
        REQUIRE(after);
        CHECK(listing_find(after->locks, "deploy", deploy->value()) == nullptr);
        CHECK(listing_find(after->leftovers, "deploy", deploy->value()) == nullptr);
        CHECK(after->locks.size() == 3);
    }

    TEST_CASE_FIXTURE(cluster, "list keeps the resources of its prefix, glob characters literal") {
        auto locks = make_client();
        REQUIRE(listing_ready(locks));
        std::vector<redlock::lock> held;
        for (const char* resource :
             {"orders:1", "orders:2", "other", "a*b", "axb", "{orders:3}:x"}) {
            auto l = locks.acquire(resource, redlock_test::writer_options(10000ms));
            REQUIRE(l);
            REQUIRE(listing_everywhere(*this, key_of(resource)));
            held.push_back(*l);
        }
        auto names = [&](const std::string& prefix) {
            redlock::list_options o;
            o.prefix = prefix;
            auto listing = locks.list(o);
            REQUIRE(listing);
            CHECK(listing->complete);
            std::vector<std::string> out;
            for (const auto& l : listing->locks) out.push_back(l.resource);
            return out;
        };
        CHECK(names("orders:") == std::vector<std::string>{"orders:1", "orders:2"});
        CHECK(names("a*") == std::vector<std::string>{"a*b"});
        CHECK(names("{orders") == std::vector<std::string>{"{orders:3}:x"});
        CHECK(names("nothing").empty());
        CHECK(names("").size() == 6);
    }

    TEST_CASE_FIXTURE(cluster,
                      "the limit and the time budget cut a listing short, and it says so") {
        // 300 locks on every node, written by hand: one MSET per server.
        std::vector<std::string> mset{"MSET"};
        for (int i = 0; i < 300; ++i) {
            mset.push_back(key_of("bulk:" + std::to_string(i)));
            mset.push_back(std::string{listing_token} + "|bulk");
        }
        for (auto& server : *this) REQUIRE(server.command(mset) == "OK");
        // A request timeout that a sanitizer's slowdown cannot exhaust either: with the
        // fixture's 50 ms, a read of a batch of keys timed out under TSan at -j6, and the
        // node that missed it made the roomy listing below incomplete.
        auto settings = config();
        settings.request_timeout = 1s;
        auto locks = make_client(settings);
        REQUIRE(listing_ready(locks));

        redlock::list_options limited;
        limited.limit = 10;
        const auto cut = locks.list(limited);
        REQUIRE(cut);
        CHECK_FALSE(cut->complete);
        CHECK(cut->truncated_reason.find("limit of 10 keys") != std::string::npos);
        for (const auto& n : cut->nodes) {
            CHECK(n.reachable);
            CHECK_FALSE(n.complete);
            CHECK(n.keys == 10);
            CHECK(n.detail == "stopped at the limit of 10 keys");
        }
        // At most 10 keys a node: at most 10 * 5 / 3 values can be on a quorum.
        CHECK(cut->locks.size() <= 16);
        CHECK(cut->locks.size() + cut->leftovers.size() <= 50);

        redlock::list_options hurried;
        hurried.batch = 1;  // a round per bucket or so: hundreds of rounds
        hurried.budget = 1ms;
        const auto rushed = locks.list(hurried);
        REQUIRE(rushed);
        CHECK_FALSE(rushed->complete);
        CHECK(rushed->truncated_reason.find("time budget of 1 ms") != std::string::npos);
        for (const auto& n : rushed->nodes) CHECK(n.keys < 300);

        // With room enough, the same keyspace lists whole (a budget that a sanitizer's
        // slowdown cannot exhaust: the default, a second here, can under TSan).
        redlock::list_options roomy;
        roomy.budget = 60s;
        const auto whole = locks.list(roomy);
        REQUIRE(whole);
        INFO("why the listing is not complete: ", whole->truncated_reason);
        CHECK(whole->complete);
        CHECK(whole->locks.size() == 300);
        CHECK(whole->leftovers.empty());
        for (const auto& n : whole->nodes) CHECK(n.keys == 300);
    }

    TEST_CASE_FIXTURE(cluster, "a node down: listed from the others, not complete, and named") {
        auto locks = make_client();
        REQUIRE(listing_ready(locks));
        auto held = locks.acquire("job", redlock_test::writer_options(10000ms));
        REQUIRE(held);
        REQUIRE(listing_everywhere(*this, key_of("job")));
        node(4).crash();
        const auto listing = locks.list();
        REQUIRE(listing);
        CHECK(listing->reachable() == 4);
        CHECK_FALSE(listing->complete);
        CHECK_FALSE(listing->nodes[4].reachable);
        CHECK_FALSE(listing->nodes[4].detail.empty());
        CHECK(listing->truncated_reason.starts_with(listing->nodes[4].node + ": "));
        REQUIRE(listing->locks.size() == 1);
        CHECK(listing->locks.front().held_on.size() == 4);
    }

    TEST_CASE_FIXTURE(cluster,
                      "list refuses cluster members and bad bounds, never inside the call") {
        auto locks = make_client();
        redlock::list_options none;
        none.limit = 0;
        std::atomic<bool> called{false};
        std::atomic<int> code{0};
        locks.list_async(none, [&](redlock::result<redlock::lock_listing> r) {
            code = r ? 0 : r.error().code.value();
            called = true;
        });
        CHECK_FALSE(called.load());  // on the loop, later
        REQUIRE(wait_until(scaled(2s), [&] { return called.load(); }));
        CHECK(code == static_cast<int>(redlock::errc::invalid_argument));
        redlock::list_options huge;
        huge.batch = 10001;
        const auto refused = locks.list(huge);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == redlock::errc::invalid_argument);

        auto settings = config();
        // Node 0 becomes the seed of a cluster member, and so is no standalone node too (a
        // config naming one server as both is refused when it is validated).
        settings.nodes.erase(settings.nodes.begin());
        settings.clusters = {redlock::cluster_member{{node(0).address()}}};
        auto mixed = make_client(settings);
        const auto clusters = mixed.list();
        REQUIRE_FALSE(clusters);
        CHECK(clusters.error().code == redlock::errc::invalid_argument);
        CHECK(clusters.error().message.find("cluster members") != std::string::npos);
    }

    TEST_CASE_FIXTURE(cluster, "what status and list cost: commands per node") {
        auto locks = make_client();
        REQUIRE(listing_ready(locks));
        auto held = locks.acquire("cost", redlock_test::writer_options(10000ms));
        REQUIRE(held);
        REQUIRE(listing_everywhere(*this, key_of("cost")));
        const auto before = locks.stats().requests;
        REQUIRE(locks.status("cost"));
        const auto after_status = locks.stats().requests;
        // GET, PTTL, GET of the fencing counter, and the readers' script.
        CHECK(after_status - before == 4 * 5);
        const auto listing = locks.list();
        REQUIRE(listing);
        REQUIRE(listing->complete);
        const auto after_list = locks.stats().requests;
        // A small keyspace is one SCAN round: SCAN, and one script reading its keys.
        std::uint64_t rounds = 0;
        for (const auto& n : listing->nodes) rounds += n.rounds;
        CHECK(rounds == 5);
        CHECK(after_list - after_status == 2 * 5);
        MESSAGE("status: " << (after_status - before) / 5
                           << " commands per node; list: " << (after_list - after_status) / 5
                           << " per node for " << rounds / 5 << " SCAN round(s)");
    }
}
