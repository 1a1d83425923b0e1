// The keys of each lock kind on real servers (README, "Key layout"): while a lock is held and
// while someone waits for it, every key on every node has its documented name and hashes to
// the slot of the resource's hash tag, so that the whole lock lives in one slot of a cluster
// member. KEYS * lists them (the servers are this test's own); the slot is computed with
// key_slot (CLUSTER KEYSLOT needs cluster mode). Also: resources whose keys could not share a
// slot are refused, naming the resource.
#include "sansio/hash_slot.hpp"
#include "support/cluster.hpp"
#include "support/lock_kinds.hpp"
#include "support/wait.hpp"

#include <doctest/doctest.h>
#include <redlock/client.hpp>

#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock::detail::key_slot;
using redlock_test::cluster;
using redlock_test::scaled;
using redlock_test::wait_until;

namespace {

auto lines_of(const std::optional<std::string>& reply) -> std::vector<std::string> {
    std::vector<std::string> lines;
    std::istringstream in{reply.value_or("")};
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) lines.push_back(line);
    }
    return lines;
}

/// Every key on `server`.
auto keys_on(const redlock_test::redis_server& server) -> std::set<std::string> {
    const auto keys = lines_of(server.command({"KEYS", "*"}));
    return {keys.begin(), keys.end()};
}

/// Every key on every node is one of `allowed` and hashes to `slot`; every key of
/// `required` is on `at_least` nodes (a waiter is granted on a majority: the last node may
/// have refused it while the release was still on its way there). Returns what is wrong, or
/// an empty string.
auto layout_problem(const cluster& nodes, const std::set<std::string>& allowed,
                    const std::set<std::string>& required, std::uint16_t slot, std::size_t at_least)
    -> std::string {
    std::string problems;
    std::map<std::string, std::size_t> found;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const std::set<std::string> keys = keys_on(nodes[i]);
        for (const auto& key : keys) {
            if (!allowed.contains(key))
                problems += "node " + std::to_string(i) + ": " + key + " unexpected\n";
            if (key_slot(key) != slot)
                problems += "node " + std::to_string(i) + ": " + key + " in slot " +
                            std::to_string(key_slot(key)) + ", not " + std::to_string(slot) + "\n";
        }
        for (const auto& key : required) found[key] += keys.contains(key) ? 1 : 0;
    }
    for (const auto& [key, nodes_with_it] : found) {
        if (nodes_with_it < at_least)
            problems += key + " on " + std::to_string(nodes_with_it) + " nodes, not " +
                        std::to_string(at_least) + "\n";
    }
    return problems;
}

/// Waits (5 s at most) until the layout has no problem; the last problem otherwise.
auto settled_layout(const cluster& nodes, const std::set<std::string>& allowed,
                    const std::set<std::string>& required, std::uint16_t slot,
                    std::size_t at_least = 3) -> std::string {
    std::string last;
    (void)wait_until(scaled(5s), [&] {
        last = layout_problem(nodes, allowed, required, slot, at_least);
        return last.empty();
    });
    return last;
}

/// The node's clock, in ms (TIME).
auto node_ms(const redlock_test::redis_server& server) -> long long {
    const auto time = lines_of(server.command({"TIME"}));
    return time.size() == 2 ? std::stoll(time[0]) * 1000 + std::stoll(time[1]) / 1000 : 0;
}

/// The kinds ("1", "r") of the live entries of the liveness hash `live` on `server`: each
/// "<kind>|<expiry ms on the node's clock>", the expiry still ahead. A malformed or expired
/// entry is returned as "bad".
auto live_kinds(const redlock_test::redis_server& server, const std::string& live)
    -> std::multiset<std::string> {
    std::multiset<std::string> kinds;
    const auto fields = lines_of(server.command({"HGETALL", live}));
    const long long now = node_ms(server);
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
        const std::string& entry = fields[i + 1];
        const auto bar = entry.find('|');
        const bool ahead = bar != std::string::npos && std::stoll(entry.substr(bar + 1)) > now;
        kinds.insert(ahead ? entry.substr(0, bar) : "bad");
    }
    return kinds;
}

/// The kinds of every live waiter agree with `expected` on `at_least` nodes (every node by
/// default), within 5 s. After a grant, 2 of 3: a node that refused the grant (the release
/// was still on its way there) keeps the granted waiter in its queue until that waiter's
/// release takes it out, its liveness entry expired meanwhile.
auto every_node_waits(const cluster& nodes, const std::string& live,
                      const std::multiset<std::string>& expected, std::size_t at_least = 3)
    -> bool {
    return wait_until(scaled(5s), [&] {
        std::size_t agreeing = 0;
        for (const auto& server : nodes) agreeing += live_kinds(server, live) == expected ? 1 : 0;
        return agreeing >= at_least;
    });
}

}  // namespace

TEST_SUITE("key layout") {
    TEST_CASE("an exclusive lock with fencing and a waiter: its keys, in one slot") {
        cluster nodes{3};
        auto holder = nodes.make_client();
        auto other = nodes.make_client();
        redlock::lock_options fenced;
        fenced.fencing = true;
        fenced.ttl = 30s;
        auto held = holder.acquire("orders:42", fenced);
        REQUIRE(held);
        const std::uint16_t slot = key_slot("{orders:42}");
        CHECK(slot == key_slot("orders:42"));  // the tag is the resource itself
        const std::string lock = "redlock:{orders:42}";
        const std::string fence = "redlock-fence:{orders:42}";
        const std::string queue = "redlock-queue:{orders:42}";
        const std::string live = "redlock-queue:{orders:42}|live";
        CHECK(nodes.key_of("orders:42") == lock);
        CHECK(settled_layout(nodes, {lock, fence}, {lock, fence}, slot) == "");
        CHECK(nodes.count_holding(lock, held->value()) == 3);

        // "{orders:42}" names the same lock.
        auto braced = other.acquire("{orders:42}", {.attempts = 1});
        REQUIRE_FALSE(braced);
        CHECK(braced.error().code == redlock::errc::contended);

        redlock::lock_options patient = fenced;
        patient.max_wait = 20s;
        auto waiter =
            std::async(std::launch::async, [&] { return other.acquire("orders:42", patient); });
        REQUIRE(every_node_waits(nodes, live, {"1"}));
        CHECK(settled_layout(nodes, {lock, fence, queue, live}, {lock, fence, queue, live}, slot) ==
              "");
        for (const auto& server : nodes) {
            CHECK(server.command({"ZCARD", queue}) == "1");
            CHECK(server.pttl(live) > 0);  // an abandoned hash expires
            CHECK(server.pttl(queue) > 0);
        }

        REQUIRE(holder.release(*held));
        auto next = waiter.get();
        REQUIRE(next);
        CHECK(next->fence() > held->fence());
        // Granted: it left the queue, which (empty) is gone with its liveness hash, on the
        // nodes that granted (a node that refused keeps it queued until its release).
        CHECK(settled_layout(nodes, {lock, fence, queue, live}, {lock, fence}, slot, 2) == "");
        CHECK(nodes.count_holding(lock, next->value()) >= 2);
        REQUIRE(other.release(*next));
        CHECK(settled_layout(nodes, {fence}, {fence}, slot) == "");
    }

    TEST_CASE("readers, a waiting writer and a reader queued behind it: every key in one slot") {
        cluster nodes{3};
        auto a = nodes.make_client();
        auto b = nodes.make_client();
        auto c = nodes.make_client();
        const std::uint16_t slot = key_slot("{doc}");
        const std::string lock = "redlock:{doc}";
        const std::string readers = "redlock:{doc}|readers";
        const std::string queue = "redlock-queue:{doc}";
        const std::string live = "redlock-queue:{doc}|live";
        const std::string offer = "redlock-queue:{doc}|offer";  // the waiting writer's offer
        const std::set<std::string> all{lock, readers, queue, live, offer};

        auto reading = a.acquire("doc", redlock_test::reader_options(30s));
        REQUIRE(reading);
        CHECK(settled_layout(nodes, all, {lock, readers}, slot) == "");
        CHECK(redlock_test::count_reading(nodes, lock, reading->value()) == 3);

        auto writer = std::async(std::launch::async, [&] {
            return b.acquire("doc", redlock_test::waiting(redlock_test::writer_options(30s), 20s));
        });
        REQUIRE(every_node_waits(nodes, live, {"1"}));
        auto late_reader = std::async(std::launch::async, [&] {
            return c.acquire("doc", redlock_test::waiting(redlock_test::reader_options(30s), 20s));
        });
        REQUIRE(every_node_waits(nodes, live, {"1", "r"}));
        CHECK(settled_layout(nodes, all, all, slot) == "");

        REQUIRE(a.release(*reading));
        auto written = writer.get();
        REQUIRE(written);
        CHECK(written->kind() == redlock::lock_kind::exclusive);
        REQUIRE(every_node_waits(nodes, live, {"r"}, 2));
        CHECK(settled_layout(nodes, all, {lock, queue, live}, slot, 2) == "");

        REQUIRE(b.release(*written));
        auto read = late_reader.get();
        REQUIRE(read);
        // Its grant took it out of the queue: the queue and its hash are gone where it was
        // granted. Granted on a majority (below, 2 of 3: after a wait, as after any grant).
        CHECK(settled_layout(nodes, all, {lock, readers}, slot, 2) == "");
        REQUIRE(c.release(*read));
        CHECK(wait_until(scaled(5s), [&] { return nodes.total_keys() == 0; }));
    }

    TEST_CASE("a semaphore's permits, its count and its waiter: every key in one slot") {
        cluster nodes{3};
        auto a = nodes.make_client();
        auto b = nodes.make_client();
        const std::uint16_t slot = key_slot("{pool}");
        const std::string count = "redlock:{pool}|permits";
        const std::string permit0 = "redlock:{pool}|permit|0";
        const std::string permit1 = "redlock:{pool}|permit|1";
        const std::string queue = "redlock-queue:{pool}|permits";
        const std::string live = "redlock-queue:{pool}|permits|live";
        const std::set<std::string> all{count, permit0, permit1, queue, live};

        auto first = a.acquire("pool", redlock_test::permit_options(2));
        REQUIRE(first);
        auto second = a.acquire("pool", redlock_test::permit_options(2));
        REQUIRE(second);
        CHECK(settled_layout(nodes, all, {count, permit0, permit1}, slot) == "");

        redlock::lock_options patient = redlock_test::permit_options(2);
        patient.attempts.reset();
        patient.max_wait = 20s;
        auto waiter = std::async(std::launch::async, [&] { return b.acquire("pool", patient); });
        REQUIRE(every_node_waits(nodes, live, {"1"}));
        CHECK(settled_layout(nodes, all, all, slot) == "");

        REQUIRE(a.release(*first));
        auto third = waiter.get();
        REQUIRE(third);
        CHECK(third->permit() == first->permit());
        // Queued still only where the grant was refused (until the release), as above.
        CHECK(settled_layout(nodes, all, {count, permit0, permit1}, slot, 2) == "");
        REQUIRE(a.release(*second));
        REQUIRE(b.release(*third));
        // The count stays, with the leases' TTL: bookkeeping, not a hold.
        CHECK(settled_layout(nodes, all, {count}, slot) == "");
        for (const auto& server : nodes) CHECK(server.pttl(count) > 0);
    }

    TEST_CASE("resources that share a hash tag share a slot, and their locks stay apart") {
        cluster nodes{3};
        auto locks = nodes.make_client();
        auto cart = locks.acquire("{user:7}:cart");
        REQUIRE(cart);
        auto orders = locks.acquire("{user:7}:orders");
        REQUIRE(orders);  // a lock of its own
        auto both = locks.acquire_all({"{user:7}:a", "{user:7}:b"});
        REQUIRE(both);
        const std::uint16_t slot = key_slot("user:7");
        const std::set<std::string> all{"redlock:{user:7}:cart", "redlock:{user:7}:orders",
                                        "redlock:{user:7}:a", "redlock:{user:7}:b"};
        CHECK(settled_layout(nodes, all, all, slot) == "");
        for (const auto* held : {&*cart, &*orders, &*both}) REQUIRE(locks.release(*held));

        // "x" and "{x}" are one lock: naming both is naming it twice.
        auto twice = locks.acquire_all({"x", "{x}"});
        REQUIRE_FALSE(twice);
        CHECK(twice.error().code == redlock::errc::invalid_argument);
        CHECK(twice.error().message.find("'x' and '{x}' name the same lock") != std::string::npos);
        CHECK(settled_layout(nodes, all, {}, slot) == "");
    }

    TEST_CASE("a resource whose keys could not share a slot is refused, by name") {
        cluster nodes{3};
        auto locks = nodes.make_client();
        // "{" + "}x" + "}" holds an empty tag, which Redis ignores.
        for (const auto& options : {redlock::lock_options{}, redlock_test::reader_options(),
                                    redlock_test::permit_options(2)}) {
            auto refused = locks.acquire("}x", options);
            REQUIRE_FALSE(refused);
            CHECK(refused.error().code == redlock::errc::invalid_argument);
            CHECK(refused.error().message.find("'}x'") != std::string::npos);
        }
        auto status = locks.status("}x");
        REQUIRE_FALSE(status);
        CHECK(status.error().code == redlock::errc::invalid_argument);
        CHECK(status.error().message.find("'}x'") != std::string::npos);
        auto permits = locks.status("}x", 2);
        REQUIRE_FALSE(permits);
        CHECK(permits.error().code == redlock::errc::invalid_argument);

        // An adopted value names its resource too: neither extended nor released.
        const redlock::lock adopted = locks.adopt("}x", "v");
        auto extended = locks.extend(adopted, 1000ms);
        REQUIRE_FALSE(extended);
        CHECK(extended.error().code == redlock::errc::invalid_argument);
        CHECK(extended.error().message.find("'}x'") != std::string::npos);
        auto released = locks.release(adopted);
        REQUIRE_FALSE(released);
        CHECK(released.error().code == redlock::errc::invalid_argument);
        CHECK(nodes.total_keys() == 0);

        // With a tag of its own it is fine: "}x{y}" is the lock of tag "y".
        auto tagged = locks.acquire("}x{y}");
        REQUIRE(tagged);
        CHECK(nodes.count_holding("redlock:}x{y}", tagged->value()) >= 2);
        REQUIRE(locks.release(*tagged));
    }
}
