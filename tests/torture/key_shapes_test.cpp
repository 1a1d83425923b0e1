// The end-of-run key check on made-up keys: every key a lock kind writes is told apart by
// its name, and a hold left behind, or bookkeeping that would not expire in time, fails.
#include "key_shapes.hpp"

#include <doctest/doctest.h>

using redlock_torture::key_layout;
using redlock_torture::key_shape;
using redlock_torture::leak_reason;
using redlock_torture::leftover_limits;
using redlock_torture::shape_of;

TEST_SUITE("torture key shapes") {
    TEST_CASE("every key shape of every lock kind is recognised") {
        const key_layout layout;
        CHECK(shape_of("redlock:{t:a}", layout) == key_shape::lock);
        CHECK(shape_of("redlock:{t:b}|readers", layout) == key_shape::reader_set);
        CHECK(shape_of("redlock:{t:c}|permit|0", layout) == key_shape::permit);
        CHECK(shape_of("redlock:{t:c}|permit|17", layout) == key_shape::permit);
        CHECK(shape_of("redlock:{t:c}|permits", layout) == key_shape::permit_count);
        CHECK(shape_of("redlock-queue:{t:a}", layout) == key_shape::queue);
        CHECK(shape_of("redlock-queue:{t:c}|permits", layout) == key_shape::queue);
        CHECK(shape_of("redlock-queue:{t:a}|live", layout) == key_shape::liveness);
        CHECK(shape_of("redlock-queue:{t:c}|permits|live", layout) == key_shape::liveness);
        CHECK(shape_of("redlock:{t:e}|leader", layout) == key_shape::leader);
        CHECK(shape_of("redlock:{t:e}|observers", layout) == key_shape::observers);
        // Not ours: the fence counters, other applications' keys.
        CHECK_FALSE(shape_of("redlock-fence:{t:a}", layout));
        CHECK_FALSE(shape_of("other:{t:a}", layout));
        // Ours, but written by no lock kind: among them the 0.1 layout's keys (no braces,
        // a liveness key per waiter).
        CHECK(shape_of("redlock:t:a", layout) == key_shape::unknown);
        CHECK(shape_of("redlock-queue:t:a", layout) == key_shape::unknown);
        CHECK(shape_of("redlock-queue:{t:a}|9f3e:12", layout) == key_shape::unknown);
        CHECK(shape_of("redlock-queue:{t:c}|permits|9f3e:12", layout) == key_shape::unknown);
        CHECK(shape_of("redlock:{t:c}|permit|x", layout) == key_shape::unknown);
        CHECK(shape_of("redlock:{t:c}|permit|", layout) == key_shape::unknown);
        CHECK(shape_of("redlock:{t:b}|r|0123abcd", layout) == key_shape::unknown);
        CHECK(shape_of("redlock:{t:b}|writers", layout) == key_shape::unknown);
        CHECK(shape_of("redlock:", layout) == key_shape::unknown);
        CHECK(shape_of("redlock:{}", layout) == key_shape::unknown);
        CHECK(shape_of("redlock:{|readers", layout) == key_shape::unknown);
        CHECK(shape_of("redlock-queue:{t:a}|", layout) == key_shape::unknown);
    }

    TEST_CASE("other prefixes are honoured") {
        const key_layout layout{"L/", "Q/"};
        CHECK(shape_of("L/{x}|permits", layout) == key_shape::permit_count);
        CHECK(shape_of("Q/{x}|live", layout) == key_shape::liveness);
        CHECK_FALSE(shape_of("redlock:{x}", layout));
    }

    TEST_CASE("a hold of any kind left after every release is a leak, whatever its TTL") {
        const leftover_limits limits{1000, 2000};
        for (const auto shape :
             {key_shape::lock, key_shape::reader_set, key_shape::permit, key_shape::unknown}) {
            CAPTURE(redlock_torture::shape_name(shape));
            CHECK(leak_reason(shape, 500, limits));
            CHECK(leak_reason(shape, -1, limits));
            CHECK_FALSE(leak_reason(shape, -2, limits));  // expired while we looked
        }
    }

    TEST_CASE("bookkeeping may stay while its TTL ends within the longest it is given") {
        const leftover_limits limits{1000, 2000};
        CHECK_FALSE(leak_reason(key_shape::permit_count, 1000, limits));
        CHECK(leak_reason(key_shape::permit_count, 1001, limits));
        CHECK(leak_reason(key_shape::permit_count, -1, limits));
        for (const auto shape : {key_shape::queue, key_shape::liveness}) {
            CHECK_FALSE(leak_reason(shape, 1500, limits));
            CHECK_FALSE(leak_reason(shape, 2000, limits));
            CHECK(leak_reason(shape, 2001, limits));
            CHECK(leak_reason(shape, -1, limits));
            CHECK_FALSE(leak_reason(shape, -2, limits));
        }
        // An election's observers' hash lives observer_ttl past the last watch.
        CHECK_FALSE(leak_reason(key_shape::observers, 30'000, limits));
        CHECK(leak_reason(key_shape::observers, 30'001, limits));
        CHECK(leak_reason(key_shape::observers, -1, limits));
        // An election's leader key has no TTL: one a leader left without resigning stays.
        CHECK_FALSE(leak_reason(key_shape::leader, -1, limits));
        const auto reason = leak_reason(key_shape::permit_count, -1, limits);
        REQUIRE(reason);
        CHECK(reason->find("without a TTL") != std::string::npos);
    }
}
