// client::list's decisions without a socket (sansio/lock_listing.hpp): keys read back
// into resources and roles, SCAN pages, the read script's replies, when a node's scan
// stops, and the tally of what a majority holds.

#include "sansio/lock_listing.hpp"

#include "reply_tree.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/timing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace redlock::detail;
using redlock::lock_kind;
using redlock_test::reply_tree;
using std::chrono::milliseconds;

namespace {

const std::string listing_prefix = "redlock:";

/// The suffix of `role`'s key (README, "Key layout").
auto listing_suffix(key_role role, int permit) -> std::string {
    switch (role) {
        case key_role::lock:
            return "";
        case key_role::readers:
            return "|readers";
        case key_role::permit:
            return "|permit|" + std::to_string(permit);
        case key_role::permits:
            return "|permits";
    }
    return "";
}

auto listing_reading(std::string resource, key_role role, std::optional<std::string> value,
                     std::optional<milliseconds> ttl, int permit = -1) -> key_reading {
    key_reading r;
    const std::string tagged = tagged_resource(resource);
    r.key = listed_key{listing_prefix + tagged + listing_suffix(role, permit), tagged,
                       untagged_resource(tagged), role, permit};
    r.value = std::move(value);
    r.ttl = ttl;
    return r;
}

auto listing_node(std::string name, std::vector<key_reading> readings) -> node_scan {
    node_scan s;
    s.node = std::move(name);
    s.reachable = true;
    s.complete = true;
    s.readings = std::move(readings);
    return s;
}

}  // namespace

TEST_SUITE("lock listing") {
    TEST_CASE("parse_listed_key reads each key of the layout back") {
        auto k = parse_listed_key("redlock:{orders:42}", listing_prefix);
        REQUIRE(k);
        CHECK(k->resource == "orders:42");
        CHECK(k->tagged == "{orders:42}");
        CHECK(k->role == key_role::lock);
        k = parse_listed_key("redlock:{orders:42}|readers", listing_prefix);
        REQUIRE(k);
        CHECK((k->role == key_role::readers && k->resource == "orders:42"));
        k = parse_listed_key("redlock:{orders:42}|permit|17", listing_prefix);
        REQUIRE(k);
        CHECK((k->role == key_role::permit && k->permit == 17 && k->resource == "orders:42"));
        k = parse_listed_key("redlock:{orders:42}|permits", listing_prefix);
        REQUIRE(k);
        CHECK((k->role == key_role::permits && k->resource == "orders:42"));
        k = parse_listed_key("redlock:{user:7}:cart", listing_prefix);
        REQUIRE(k);
        CHECK((k->role == key_role::lock && k->resource == "{user:7}:cart"));
        // A resource whose name holds a suffix, wrapped: the suffix is inside the braces.
        k = parse_listed_key("redlock:{a|readers}", listing_prefix);
        REQUIRE(k);
        CHECK((k->role == key_role::lock && k->resource == "a|readers"));
        k = parse_listed_key("redlock:{a}|permit|0", listing_prefix);
        REQUIRE(k);
        CHECK((k->role == key_role::permit && k->permit == 0));

        CHECK_FALSE(parse_listed_key("other:{x}", listing_prefix));
        CHECK_FALSE(parse_listed_key("redlock:x", listing_prefix));  // 0.1's layout: no tag
        CHECK_FALSE(parse_listed_key("redlock:{}", listing_prefix));
        CHECK_FALSE(parse_listed_key("redlock:", listing_prefix));
        // Malformed permit indexes: not a permit key, and no tag of its own after the '}'.
        for (const char* bad :
             {"|permit|01", "|permit|1024", "|permit|x", "|permit|", "|permit|-1"}) {
            CAPTURE(bad);
            k = parse_listed_key(std::string{"redlock:{a}"} + bad, listing_prefix);
            REQUIRE(k);  // "{a}|permit|01" has a tag of its own: an own-tagged resource's lock
            CHECK(k->role == key_role::lock);
            CHECK(k->resource == std::string{"{a}"} + bad);
        }
    }

    TEST_CASE("every key of every wrapped resource reads back as its resource and role") {
        // Resources of up to three tokens, some of them the suffixes themselves.
        const std::vector<std::string> tokens{"a",         "{",        "}", "|readers",
                                              "|permit|3", "|permits", ":"};
        std::vector<std::string> resources{""};
        for (std::size_t length = 0, from = 0; length < 3; ++length) {
            const std::size_t to = resources.size();
            for (std::size_t i = from; i < to; ++i) {
                for (const auto& t : tokens) resources.push_back(resources[i] + t);
            }
            from = to;
        }
        std::size_t exact = 0;
        for (const auto& r : resources) {
            if (!taggable(r)) continue;
            const std::string t = tagged_resource(r);
            for (const auto& role_permit :
                 {std::pair{key_role::lock, -1}, std::pair{key_role::readers, -1},
                  std::pair{key_role::permit, 5}, std::pair{key_role::permits, -1}}) {
                // Not a structured binding: clang 14 refuses one captured by a lambda.
                const key_role role = role_permit.first;
                const int permit = role_permit.second;
                CAPTURE(r);
                CAPTURE(static_cast<int>(role));
                const std::string key = listing_prefix + t + listing_suffix(role, permit);
                const auto k = parse_listed_key(key, listing_prefix);
                REQUIRE(k);
                // Whatever it reads as, it is a key of the layout that names itself.
                CHECK(k->name == key);
                CHECK(listing_prefix + k->tagged + listing_suffix(k->role, k->permit) == key);
                CHECK(tagged_resource(k->resource) == k->tagged);
                if (!has_own_hash_tag(r)) {
                    // Wrapped: the braces delimit T, nothing is ambiguous.
                    CHECK(k->tagged == t);
                    CHECK(k->role == role);
                    CHECK(k->permit == permit);
                    ++exact;
                }
            }
        }
        CHECK(exact > 400);
    }

    TEST_CASE("the MATCH pattern escapes glob characters") {
        CHECK(glob_escaped("a*b?c[d]e\\f") == "a\\*b\\?c\\[d\\]e\\\\f");
        CHECK(listing_pattern("redlock:", "") == "redlock:*");
        CHECK(listing_pattern("redlock:", "orders") == "redlock:*orders*");
        CHECK(listing_pattern("r*:", "a?") == "r\\*:*a\\?*");
    }

    TEST_CASE("parse_scan_page takes a cursor and keys, and nothing else") {
        reply_tree t;
        auto page =
            parse_scan_page(t.array({t.string("17"), t.array({t.string("a"), t.string("b")})}));
        REQUIRE(page);
        CHECK(page->cursor == "17");
        CHECK(page->keys == std::vector<std::string>{"a", "b"});
        page = parse_scan_page(t.array({t.string("0"), t.array({})}));
        REQUIRE(page);
        CHECK(page->keys.empty());
        CHECK_FALSE(parse_scan_page(nullptr));
        CHECK_FALSE(parse_scan_page(t.error("ERR")));
        CHECK_FALSE(parse_scan_page(t.array({t.string("0")})));
        CHECK_FALSE(parse_scan_page(t.array({t.integer(0), t.array({})})));
        CHECK_FALSE(parse_scan_page(t.array({t.string("0"), t.array({t.integer(1)})})));
    }

    TEST_CASE("read_command names every key, then the lock keys' fencing counters") {
        read_batch batch;
        batch.keys.push_back(*parse_listed_key("redlock:{a}", listing_prefix));
        batch.keys.push_back(*parse_listed_key("redlock:{a}|readers", listing_prefix));
        batch.keys.push_back(*parse_listed_key("redlock:{b}", listing_prefix));
        batch.fenced = {0, 2};
        const auto command = read_command(batch, "redlock-fence:");
        REQUIRE(command.size() == 8);
        CHECK(command[0] == "EVAL");
        CHECK(command[1] == listing_read_source());
        CHECK(command[2] == "5");
        CHECK(command[3] == "redlock:{a}");
        CHECK(command[4] == "redlock:{a}|readers");
        CHECK(command[5] == "redlock:{b}");
        CHECK(command[6] == "redlock-fence:{a}");
        CHECK(command[7] == "redlock-fence:{b}");
    }

    TEST_CASE("parse_read_reply: strings, live readers, keys gone, fencing counters") {
        read_batch batch;
        batch.keys.push_back(*parse_listed_key("redlock:{a}", listing_prefix));
        batch.keys.push_back(*parse_listed_key("redlock:{a}|readers", listing_prefix));
        batch.keys.push_back(*parse_listed_key("redlock:{b}", listing_prefix));
        batch.fenced = {0, 2};
        reply_tree t;
        const auto* r = t.array({
            t.array({t.integer(1), t.string("tok|me"), t.integer(900)}),
            t.array({t.integer(2),
                     t.array({t.string("r2"), t.integer(50), t.string("r1"), t.integer(70)})}),
            t.array({t.integer(0)}),  // gone since the SCAN
            t.array({t.integer(1), t.string("12"), t.integer(-1)}),
            t.array({t.integer(0)}),
        });
        const auto readings = parse_read_reply(batch, r);
        REQUIRE(readings);
        REQUIRE(readings->size() == 2);
        CHECK((*readings)[0].key.name == "redlock:{a}");
        CHECK((*readings)[0].value == "tok|me");
        CHECK((*readings)[0].ttl == milliseconds{900});
        CHECK((*readings)[0].fence == 12u);
        REQUIRE((*readings)[1].readers.size() == 2);
        CHECK((*readings)[1].readers[0].value == "r1");  // ordered by value
        CHECK((*readings)[1].readers[0].ttl == milliseconds{70});
        CHECK((*readings)[1].readers[1].value == "r2");

        // A key without a TTL; the wrong number of entries; not the script's shape.
        batch.keys.resize(1);
        batch.fenced.clear();
        const auto none = parse_read_reply(
            batch, t.array({t.array({t.integer(1), t.string("v"), t.integer(-1)})}));
        REQUIRE(none);
        REQUIRE(none->size() == 1);
        CHECK_FALSE((*none)[0].ttl);
        CHECK_FALSE(parse_read_reply(batch, t.array({})));
        CHECK_FALSE(parse_read_reply(batch, t.array({t.string("x")})));
        CHECK_FALSE(parse_read_reply(batch, t.error("NOSCRIPT")));
    }

    TEST_CASE("next_scan_step keeps the prefix's keys and stops at the limit or the budget") {
        scan_page page{"42",
                       {"redlock:{orders:1}", "redlock:{other}", "redlock:junk",
                        "redlock:{orders:2}|readers", "redlock:{orders:3}|permit|1"}};
        auto step = next_scan_step(page, listing_prefix, "orders:", 0, 100, false);
        CHECK(step.more);
        CHECK(step.stopped == scan_stop::none);
        REQUIRE(step.batch.keys.size() == 3);
        CHECK(step.batch.fenced == std::vector<std::size_t>{0});

        // The limit falls inside the page: a key is left over, so there is more.
        page.cursor = "0";
        step = next_scan_step(page, listing_prefix, "", 3, 5, false);
        CHECK_FALSE(step.more);
        CHECK(step.stopped == scan_stop::limit);
        CHECK(step.batch.keys.size() == 2);
        // Exactly at the limit at the end of the keyspace: complete.
        step = next_scan_step(page, listing_prefix, "", 0, 4, false);
        CHECK(step.stopped == scan_stop::none);
        CHECK_FALSE(step.more);
        CHECK(step.batch.keys.size() == 4);
        // At the limit with the cursor still going: stopped.
        page.cursor = "9";
        step = next_scan_step(page, listing_prefix, "", 0, 4, false);
        CHECK(step.stopped == scan_stop::limit);
        CHECK_FALSE(step.more);
        // The budget stops a node that has more, not one at its end.
        step = next_scan_step(page, listing_prefix, "", 0, 100, true);
        CHECK(step.stopped == scan_stop::budget);
        CHECK_FALSE(step.more);
        CHECK(step.batch.keys.size() == 4);  // this page is still read
        page.cursor = "0";
        step = next_scan_step(page, listing_prefix, "", 0, 100, true);
        CHECK(step.stopped == scan_stop::none);
    }

    TEST_CASE("tally: a value on a quorum is a lock, on fewer a leftover, for every subset") {
        for (std::size_t n = 1; n <= 5; ++n) {
            const std::size_t q = quorum(n);
            for (unsigned mask = 1; mask < (1U << n); ++mask) {
                CAPTURE(n);
                CAPTURE(mask);
                std::vector<node_scan> scans;
                std::vector<milliseconds> ttls;
                for (std::size_t i = 0; i < n; ++i) {
                    std::vector<key_reading> readings;
                    if ((mask >> i) & 1U) {
                        const milliseconds ttl{1000 + 100 * static_cast<long>(i)};
                        ttls.push_back(ttl);
                        readings.push_back(
                            listing_reading("res", key_role::lock,
                                            "0123456789abcdef0123456789abcdef|host:1 (job)", ttl));
                    }
                    scans.push_back(listing_node("n" + std::to_string(i), std::move(readings)));
                }
                const auto listing = tally_listing(std::move(scans), q);
                CHECK(listing.complete);
                CHECK(listing.quorum == q);
                const bool majority = ttls.size() >= q;
                REQUIRE(listing.locks.size() == (majority ? 1u : 0u));
                REQUIRE(listing.leftovers.size() == (majority ? 0u : 1u));
                const auto& l = majority ? listing.locks.front() : listing.leftovers.front();
                CHECK(l.resource == "res");
                CHECK(l.kind == lock_kind::exclusive);
                CHECK(l.holder == "host:1 (job)");
                CHECK(l.value == "0123456789abcdef0123456789abcdef|host:1 (job)");
                REQUIRE(l.held_on.size() == ttls.size());
                // Longest first: a lock lasts as long as its quorum-th longest TTL.
                std::ranges::sort(ttls, std::greater<>{});
                CHECK(l.expires_in == (majority ? ttls[q - 1] : ttls.front()));
                for (std::size_t i = 0, at = 0; i < n; ++i) {
                    if ((mask >> i) & 1U) CHECK(l.held_on[at++] == "n" + std::to_string(i));
                }
            }
        }
    }

    TEST_CASE("tally: readers, permits, fences, the readers' marker and duplicate keys") {
        auto readers_reading = [](std::vector<redlock::node_reader> readers) {
            auto r = listing_reading("doc", key_role::readers, std::nullopt, std::nullopt);
            r.readers = std::move(readers);
            return r;
        };
        auto marker = listing_reading("doc", key_role::lock, "~readers", milliseconds{3000});
        marker.fence = 7;
        auto writer = listing_reading("deploy", key_role::lock, "w1", std::nullopt);  // no TTL
        writer.fence = 3;
        auto older_fence = writer;
        older_fence.fence = 2;
        std::vector<node_scan> scans;
        scans.push_back(listing_node(
            "a", {marker, readers_reading({{"r1", milliseconds{500}}, {"r2", milliseconds{900}}}),
                  writer, writer,  // SCAN returned it twice
                  listing_reading("sem", key_role::permit, "p0", milliseconds{100}, 0),
                  listing_reading("sem", key_role::permits, "3", milliseconds{100})}));
        scans.push_back(
            listing_node("b", {marker, readers_reading({{"r1", milliseconds{400}}}), older_fence,
                               listing_reading("sem", key_role::permit, "p0", milliseconds{200}, 0),
                               listing_reading("sem", key_role::permit, "p1", milliseconds{200}, 1),
                               listing_reading("sem", key_role::permits, "3", milliseconds{100})}));
        auto down = listing_node("c", {});
        down.reachable = false;
        down.complete = false;
        down.detail = "connection refused";
        scans.push_back(down);
        const auto listing = tally_listing(std::move(scans), 2);
        CHECK_FALSE(listing.complete);
        CHECK(listing.truncated_reason == "c: connection refused");
        CHECK(listing.reachable() == 2);
        REQUIRE(listing.nodes.size() == 3);
        CHECK(listing.nodes[2].detail == "connection refused");

        // Ordered by resource, then kind (writer, reader, permit), permit, value.
        REQUIRE(listing.locks.size() == 3);
        CHECK(listing.locks[0].resource == "deploy");
        CHECK(listing.locks[0].kind == lock_kind::exclusive);
        CHECK(listing.locks[0].held_on.size() == 2);  // the duplicate counted once
        CHECK(listing.locks[0].fence == 3u);          // the highest counter
        CHECK_FALSE(listing.locks[0].expires_in);     // a key without a TTL
        CHECK(listing.locks[0].holder.empty());       // a value without a holder text
        CHECK(listing.locks[1].resource == "doc");
        CHECK(listing.locks[1].kind == lock_kind::shared);
        CHECK(listing.locks[1].value == "r1");
        CHECK(listing.locks[1].expires_in == milliseconds{400});
        CHECK(listing.locks[1].fence == 7u);  // the marker's counter is the resource's
        CHECK(listing.locks[2].resource == "sem");
        CHECK(listing.locks[2].kind == lock_kind::permit);
        CHECK(listing.locks[2].permit == 0);
        CHECK(listing.locks[2].permits == 3);
        CHECK_FALSE(listing.locks[2].fence);
        CHECK(listing.locks[2].expires_in == milliseconds{100});

        REQUIRE(listing.leftovers.size() == 2);
        CHECK(listing.leftovers[0].value == "r2");
        CHECK(listing.leftovers[0].held_on == std::vector<std::string>{"a"});
        CHECK(listing.leftovers[0].expires_in == milliseconds{900});
        CHECK(listing.leftovers[1].permit == 1);
        CHECK(listing.leftovers[1].held_on == std::vector<std::string>{"b"});
        for (const auto& l : listing.locks) CHECK(l.value != "~readers");
    }

    TEST_CASE("tally: nothing held, and no node at all") {
        std::vector<node_scan> scans;
        scans.push_back(listing_node("a", {}));
        auto listing = tally_listing(std::move(scans), 1);
        CHECK(listing.complete);
        CHECK(listing.truncated_reason.empty());
        CHECK(listing.locks.empty());
        CHECK(listing.leftovers.empty());
        listing = tally_listing({}, 1);
        CHECK_FALSE(listing.complete);
    }
}
