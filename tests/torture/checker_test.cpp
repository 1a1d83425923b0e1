// The torture checker on made-up records: it must see what it is there to see.
#include "checker.hpp"

#include "record.hpp"

#include <doctest/doctest.h>

#include <vector>

using redlock_torture::check_holds;
using redlock_torture::hold_record;

namespace {

constexpr std::int64_t ms = 1'000'000;

auto hold(int worker, const char* resource, std::uint64_t fence, std::int64_t start_ms,
          std::int64_t end_ms, std::int64_t until_ms) -> hold_record {
    hold_record r;
    r.worker = worker;
    r.resource = resource;
    r.fence = fence;
    r.called_ns = (start_ms - 5) * ms;
    r.start_ns = start_ms * ms;
    r.end_ns = end_ms * ms;
    r.until_start_ns = until_ms * ms;
    r.until_end_ns = until_ms * ms;
    r.valid_at_start = true;
    r.valid_at_end = end_ms < until_ms;
    r.ttl_ms = 1000;
    return r;
}

}  // namespace

TEST_SUITE("torture checker") {
    TEST_CASE("successive holders with increasing tokens pass") {
        const auto report =
            check_holds({hold(0, "a", 1, 0, 100, 900), hold(1, "a", 2, 101, 300, 1000),
                         hold(0, "b", 7, 50, 500, 900), hold(2, "a", 5, 300, 301, 1200)});
        CHECK(report.ok());
        CHECK(report.holds == 4);
        CHECK(report.holds_per_resource.at("a") == 3);
    }

    TEST_CASE("an overlap of believed-valid intervals is found, whatever the record order") {
        const auto report =
            check_holds({hold(1, "a", 2, 50, 300, 1000), hold(0, "a", 1, 0, 100, 900)});
        REQUIRE(report.overlaps.size() == 1);
        CHECK(report.overlaps[0].earlier.worker == 0);
        CHECK(report.overlaps[0].later.worker == 1);
        CHECK(report.overlaps[0].overlap_ns == 50 * ms);
        CHECK(report.inversions.empty());
    }

    TEST_CASE("a holder past its validity counts only up to valid_until") {
        // Worker 0 held until 500 but its validity ended at 200: worker 1 at 300 is fine.
        auto late = hold(0, "a", 1, 0, 500, 200);
        const auto report = check_holds({late, hold(1, "a", 2, 300, 400, 1300)});
        CHECK(report.ok());
        // Had worker 1 started at 150, both would have believed they held it.
        CHECK(check_holds({late, hold(1, "a", 2, 150, 400, 1300)}).overlaps.size() == 1);
    }

    TEST_CASE("a token that does not increase is an inversion, equal ones included") {
        auto report = check_holds({hold(0, "a", 5, 0, 100, 900), hold(1, "a", 4, 200, 300, 1200)});
        REQUIRE(report.inversions.size() == 1);
        CHECK(report.inversions[0].earlier.fence == 5);
        CHECK(report.inversions[0].later.fence == 4);
        CHECK(report.overlaps.empty());
        report = check_holds({hold(0, "a", 5, 0, 100, 900), hold(1, "a", 5, 200, 300, 1200)});
        CHECK(report.inversions.size() == 1);
        // The highest earlier token counts, not only the previous one.
        report = check_holds({hold(0, "a", 9, 0, 100, 900), hold(1, "a", 3, 200, 300, 1200),
                              hold(2, "a", 8, 400, 500, 1300)});
        CHECK(report.inversions.size() == 2);
    }

    TEST_CASE("resources are checked separately") {
        const auto report =
            check_holds({hold(0, "a", 5, 0, 100, 900), hold(1, "b", 1, 50, 300, 1200)});
        CHECK(report.ok());
    }

    TEST_CASE("a lock already invalid when acquire returned is counted, not checked") {
        auto stale = hold(0, "a", 9, 100, 150, 90);
        stale.valid_at_start = false;
        const auto report = check_holds({hold(1, "a", 10, 0, 80, 900), stale});
        CHECK(report.ok());
        CHECK(report.never_valid == 1);
    }

    TEST_CASE("records survive formatting and parsing") {
        auto r = hold(3, "torture:a", 42, 10, 20, 30);
        r.lost = true;
        r.lost_at_ns = 25 * ms;
        r.auto_renew = true;
        r.extends = 2;
        r.deleted = 3;
        r.release_ok = 1;
        const auto back = redlock_torture::parse_hold(r.format());
        REQUIRE(back);
        CHECK(back->format() == r.format());
        CHECK_FALSE(redlock_torture::parse_hold("hold worker=1"));
        redlock_torture::worker_summary s;
        s.worker = 2;
        s.counts["granted"] = 17;
        const auto summary = redlock_torture::parse_summary(s.format());
        REQUIRE(summary);
        CHECK(summary->counts.at("granted") == 17);
    }
}
