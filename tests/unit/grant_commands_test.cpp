// What an acquisition sends and how it reads the answers (grant_commands,
// lock_commands), and the per-node request numbers it disowns once decided
// (request_numbers): without a socket, every node count and kind of lock.

#include "operations/grant_commands.hpp"

#include "operations/lock_commands.hpp"
#include "operations/lock_state.hpp"
#include "operations/request_numbers.hpp"
#include "sansio/command.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/reply.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace redlock::detail;

namespace {

auto encoded(std::initializer_list<std::string_view> argv) -> std::string {
    return std::string{encoded_command{argv}.bytes()};
}

const key_space keys{"lock:", "queue:", "fence:", "queue:wake:"};

/// A lock on `resources` with value v1 and a 2 s TTL (lock_state is not copyable).
void make_plain(lock_state& s, std::vector<std::string> resources) {
    s.resources = std::move(resources);
    s.value = "v1";
    s.ttl = std::chrono::milliseconds{2000};
}

/// RESP bulk strings, as they appear inside an encoded command.
auto bulk(std::initializer_list<std::string_view> items) -> std::string {
    std::string out;
    for (const auto item : items)
        out.append("$")
            .append(std::to_string(item.size()))
            .append("\r\n")
            .append(item)
            .append("\r\n");
    return out;
}

auto integer_reply(long long n) -> reply {
    return reply{reply_kind::integer, n, {}, {}};
}

auto answered(const reply& r) -> reply_event {
    return reply_event{request_status::reply, &r, {}};
}

}  // namespace

TEST_SUITE("grant commands") {
    TEST_CASE("a plain lock is one SET NX PX, and its answers are OK or nil") {
        lock_state lock;
        make_plain(lock, {"orders"});
        const grant_commands cmds{keys, lock, {}, nullptr};
        CHECK(cmds.plain_set());
        CHECK(cmds.grant(false, 0).bytes() ==
              encoded({"SET", "lock:{orders}", "v1", "NX", "PX", "2000"}));
        const reply ok{reply_kind::status, 0, "OK", {}};
        const reply nil{};
        CHECK(cmds.grant_answer_of(answered(ok)).outcome.status == redlock::node_status::ok);
        CHECK(cmds.grant_answer_of(answered(nil)).outcome.status == redlock::node_status::refused);
        const reply_event late{request_status::timeout, nullptr, "no reply within 50 ms"};
        CHECK(cmds.grant_answer_of(late).outcome.status == redlock::node_status::timeout);
    }

    TEST_CASE("several resources run the acquire script, and a refusal names the resource held") {
        lock_state lock;
        make_plain(lock, {"a", "b", "c"});
        const grant_commands cmds{keys, lock, {.scripted = true}, nullptr};
        CHECK_FALSE(cmds.plain_set());
        const std::string sha{cmds.grant(false, 0).bytes()};
        CHECK(sha.find("EVALSHA") != std::string::npos);
        CHECK(std::string{cmds.grant(true, 0).bytes()}.find("EVAL\r\n") != std::string::npos);
        const reply zero = integer_reply(0);
        const reply counter = integer_reply(7);
        const reply index = integer_reply(1);
        const std::array<const reply*, 3> refusal_items{&zero, &counter, &index};
        const reply refusal{reply_kind::array, 0, {}, refusal_items};
        CHECK(cmds.held_resource(answered(refusal)) == 1U);
        const grant_answer a = cmds.grant_answer_of(answered(refusal));
        CHECK(a.outcome.status == redlock::node_status::refused);
        CHECK(a.counter == 7);
    }

    TEST_CASE("a release's answer to the hand-off: 2 granted us, 1 or 0 left us queued") {
        const reply two = integer_reply(2);
        const reply one = integer_reply(1);
        const reply zero = integer_reply(0);
        const reply odd = integer_reply(5);
        CHECK(grant_commands::handoff_answer_of(answered(two)).outcome.status ==
              redlock::node_status::ok);
        for (const reply* r : {&one, &zero}) {
            const grant_answer a = grant_commands::handoff_answer_of(answered(*r));
            CHECK(a.outcome.status == redlock::node_status::refused);
            CHECK(a.queued);
        }
        CHECK(grant_commands::handoff_answer_of(answered(odd)).outcome.status ==
              redlock::node_status::error);
    }

    TEST_CASE("a semaphore's keys: the count, the queue apart, and the strays' permits") {
        lock_state lock;
        make_plain(lock, {"pool"});
        lock.kind = redlock::lock_kind::permit;
        lock.permits = 3;
        lock.slot = 1;
        CHECK(permit_count_key(keys, lock) == "lock:{pool}|permits");
        CHECK(queue_key(keys, lock).view() == "queue:{pool}|permits");
        CHECK(live_key(keys, lock).view() == "queue:{pool}|permits|live");
        CHECK(permit_keys(keys, lock, permit_scope::held) ==
              std::vector<std::string>{"lock:{pool}|permit|1"});
        CHECK(permit_keys(keys, lock, permit_scope::all_but_held) ==
              std::vector<std::string>{"lock:{pool}|permit|0", "lock:{pool}|permit|2"});
        CHECK(permit_keys(keys, lock, permit_scope::all) ==
              std::vector<std::string>{"lock:{pool}|permit|0", "lock:{pool}|permit|1",
                                       "lock:{pool}|permit|2"});
    }

    TEST_CASE("every key of a lock carries the resource's hash tag: one slot per lock") {
        lock_state lock;
        make_plain(lock, {"orders:42"});
        CHECK(keys_of(keys, lock).front() == "lock:{orders:42}");
        CHECK(readers_key(keys, lock).view() == "lock:{orders:42}|readers");
        CHECK(queue_key(keys, lock).view() == "queue:{orders:42}");
        CHECK(live_key(keys, lock).view() == "queue:{orders:42}|live");
        CHECK(fence_key(keys, lock) == "fence:{orders:42}");
        const std::uint16_t slot = key_slot("{orders:42}");
        // Each key made first: a view into a temporary would dangle in the list.
        const auto lock_key = keys_of(keys, lock);
        const auto readers = readers_key(keys, lock);
        const auto queue = queue_key(keys, lock);
        const auto live = live_key(keys, lock);
        for (const std::string_view k :
             {lock_key.front(), readers.view(), queue.view(), live.view()})
            CHECK(key_slot(k) == slot);
        CHECK(key_slot(fence_key(keys, lock)) == slot);

        // "x" and "{x}" name the same lock; a resource's own tag is kept, so
        // resources that share one share a slot.
        lock_state braced;
        make_plain(braced, {"{orders:42}"});
        CHECK(keys_of(keys, braced).front() == "lock:{orders:42}");
        lock_state tagged;
        make_plain(tagged, {"{user:7}:cart", "{user:7}:orders"});
        const lock_keys both = keys_of(keys, tagged);
        REQUIRE(both.all().size() == 2);
        CHECK(both.all()[0] == "lock:{user:7}:cart");
        CHECK(both.all()[1] == "lock:{user:7}:orders");
        CHECK(key_slot(both.all()[0]) == key_slot(both.all()[1]));

        // A long resource leaves the stack buffer for the heap, unchanged.
        lock_state long_name;
        make_plain(long_name, {std::string(300, 'r')});
        CHECK(keys_of(keys, long_name).front() == "lock:{" + std::string(300, 'r') + "}");
    }

    TEST_CASE("each waiting grant names its queue and the queue's liveness hash in KEYS") {
        lock_state lock;
        make_plain(lock, {"doc"});
        const queue_entry entry{"c1:7", "2000", "123", "", false};
        const grant_commands waiting{keys, lock, {.scripted = true}, &entry};
        const std::string grant{waiting.grant(true, 0).bytes()};
        CHECK(grant.find(bulk({"4", "lock:{doc}", "queue:{doc}", "queue:{doc}|live",
                               "queue:{doc}|offer", "v1"})) != std::string::npos);
        CHECK(std::string{waiting.dequeue().bytes()}.find(
                  bulk({"2", "queue:{doc}", "queue:{doc}|live", "c1:7"})) != std::string::npos);

        // A waiter that leaves offers: its attempt's number is the last argument, and its
        // leaving is the release script without a value (it releases what its offer was handed).
        const queue_entry offering{"c1:7", "2000", "123", "4", true};
        const grant_commands offers{keys, lock, {.scripted = true}, &offering};
        CHECK(std::string{offers.grant(true, 0).bytes()}.find(bulk({"t", "123", "4"})) !=
              std::string::npos);
        CHECK(std::string{offers.dequeue().bytes()}.find(
                  bulk({"4", "lock:{doc}", "queue:{doc}", "queue:{doc}|live", "queue:{doc}|offer",
                        "", "1"})) != std::string::npos);

        lock_state reader;
        make_plain(reader, {"doc"});
        reader.kind = redlock::lock_kind::shared;
        const grant_commands fenced_reader{
            keys, reader, {.scripted = true, .read_fence = true}, nullptr};
        CHECK(std::string{fenced_reader.grant(true, 0).bytes()}.find(
                  bulk({"5", "lock:{doc}", "lock:{doc}|readers", "queue:{doc}", "queue:{doc}|live",
                        "fence:{doc}", "v1"})) != std::string::npos);

        lock_state pool;
        make_plain(pool, {"pool"});
        pool.kind = redlock::lock_kind::permit;
        pool.permits = 2;
        const grant_commands permit{keys, pool, {.scripted = true}, nullptr};
        CHECK(std::string{permit.grant(true, 1).bytes()}.find(bulk(
                  {"5", "lock:{pool}|permits", "queue:{pool}|permits", "queue:{pool}|permits|live",
                   "lock:{pool}|permit|0", "lock:{pool}|permit|1", "v1"})) != std::string::npos);
    }
}

TEST_SUITE("request numbers") {
    TEST_CASE("every node's number is kept, whatever the node count") {
        for (const std::size_t nodes : {1U, 3U, 8U, 9U, 15U, 255U}) {
            request_numbers numbers{nodes};
            for (std::size_t i = 0; i < nodes; ++i)
                numbers.set(i, static_cast<std::uint32_t>(1000 + i));
            for (std::size_t i = 0; i < nodes; ++i) {
                INFO("nodes=" << nodes << " node=" << i);
                CHECK(numbers[i] == 1000 + i);
            }
        }
    }
}
