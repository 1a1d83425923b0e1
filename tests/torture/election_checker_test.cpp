// The election checker on made-up records: it must see what it is there to see.
#include "election_checker.hpp"

#include "election_record.hpp"

#include <doctest/doctest.h>

#include <vector>

using redlock_torture::check_election;
using redlock_torture::lead_end;
using redlock_torture::lead_record;
using redlock_torture::ns_per_ms;
using redlock_torture::write_record;

namespace {

/// Candidate `worker` led with `term` over [start, end] ms, valid until `until` ms.
auto lead(int worker, std::uint64_t term, std::int64_t start_ms, std::int64_t end_ms,
          std::int64_t until_ms, lead_end how = lead_end::resigned) -> lead_record {
    lead_record r;
    r.worker = worker;
    r.election = "e";
    r.term = term;
    r.called_ns = (start_ms - 5) * ns_per_ms;
    r.start_ns = start_ms * ns_per_ms;
    r.end_ns = end_ms * ns_per_ms;
    r.until_start_ns = until_ms * ns_per_ms;
    r.until_end_ns = until_ms * ns_per_ms;
    r.valid_at_start = true;
    r.valid_at_end = end_ms < until_ms;
    r.ttl_ms = 500;
    r.how = how;
    return r;
}

auto wrote(int worker, std::uint64_t term, std::int64_t at_ms, bool late = false) -> write_record {
    return write_record{worker, term, at_ms * ns_per_ms, late};
}

}  // namespace

TEST_SUITE("torture election checker") {
    TEST_CASE("successive leaders with increasing terms and their writes pass") {
        const auto report =
            check_election({lead(0, 3, 0, 100, 400), lead(1, 4, 150, 300, 600, lead_end::abandoned),
                            lead(2, 9, 700, 800, 1000)},
                           {wrote(0, 3, 10), wrote(0, 3, 90), wrote(1, 4, 160), wrote(1, 4, 290),
                            wrote(2, 9, 710)});
        CHECK(report.ok());
        CHECK(report.leaderships == 3);
        CHECK(report.accepted == 5);
        CHECK(report.stale_writes == 0);
        CHECK(report.handovers_by_resignation == 1);
        CHECK(report.failovers_by_expiry == 1);
        CHECK(report.longest_expiry_gap_ns == 400 * ns_per_ms);
        CHECK(report.lowest_term == 3);
        CHECK(report.highest_term == 9);
    }

    TEST_CASE("overlapping leaderships are found, whatever the record order") {
        const auto report = check_election({lead(1, 5, 50, 300, 900), lead(0, 4, 0, 100, 400)}, {});
        REQUIRE(report.overlaps.size() == 1);
        CHECK(report.overlaps[0].earlier.worker == 0);
        CHECK(report.overlaps[0].later.worker == 1);
        CHECK(report.overlaps[0].overlap_ns == 50 * ns_per_ms);
        CHECK(report.inversions.empty());
        CHECK_FALSE(report.ok());
    }

    TEST_CASE("a leadership past its validity ends there, and one never valid is left out") {
        // Worker 0 acted until 500 ms but was valid only until 200: no overlap with 250.
        auto never = lead(2, 1, 210, 220, 215);
        never.valid_at_start = false;
        const auto report = check_election(
            {lead(0, 4, 0, 500, 200, lead_end::lost), lead(1, 5, 250, 300, 700), never}, {});
        CHECK(report.ok());
        CHECK(report.never_valid == 1);
        CHECK(report.failovers_by_expiry == 1);
    }

    TEST_CASE("an equal term and a lower term are inversions") {
        const auto equal = check_election({lead(0, 4, 0, 100, 400), lead(1, 4, 200, 300, 600)}, {});
        REQUIRE(equal.inversions.size() == 1);
        CHECK(equal.inversions[0].later.worker == 1);
        const auto lower = check_election(
            {lead(0, 4, 0, 100, 400), lead(1, 6, 200, 300, 600), lead(2, 5, 400, 500, 900)}, {});
        REQUIRE(lower.inversions.size() == 1);
        CHECK(lower.inversions[0].earlier.term == 6);
        CHECK(lower.inversions[0].later.term == 5);
        CHECK(lower.overlaps.empty());
    }

    TEST_CASE("a write must carry a term its candidate led with, within its leadership") {
        const auto wrong_term = check_election({lead(0, 4, 0, 100, 400), lead(1, 5, 200, 300, 600)},
                                               {wrote(1, 4, 250)});
        REQUIRE(wrong_term.write_problems.size() == 1);
        CHECK_FALSE(wrong_term.write_problems[0].lead.has_value());
        // Written after its validity ended, without saying so: the leader did not stop.
        const auto too_late = check_election({lead(0, 4, 0, 300, 200)}, {wrote(0, 4, 250)});
        REQUIRE(too_late.write_problems.size() == 1);
        CHECK(too_late.write_problems[0].lead->term == 4);
    }

    TEST_CASE("a late write is refused once a newer leader wrote, and counted otherwise") {
        const auto report = check_election(
            {lead(0, 4, 0, 100, 400, lead_end::abandoned), lead(1, 5, 500, 700, 900)},
            {wrote(0, 4, 50), wrote(0, 4, 450, true), wrote(1, 5, 510), wrote(0, 4, 600, true)});
        CHECK(report.ok());
        CHECK(report.late_writes == 2);
        CHECK(report.stale_writes == 2);
        CHECK(report.stale_unopposed == 1);  // at 450 ms, before the next leader's first write
        CHECK(report.stale_rejected == 1);   // at 600 ms
        CHECK(report.accepted == 3);
    }

    TEST_CASE("a stale term accepted after a newer leader wrote fails") {
        // Terms decreasing from leader to leader: the store takes the old leader's late write.
        const auto report = check_election(
            {lead(0, 7, 0, 100, 400, lead_end::abandoned), lead(1, 5, 500, 700, 900)},
            {wrote(1, 5, 510), wrote(0, 7, 600, true)});
        CHECK(report.inversions.size() == 1);
        REQUIRE(report.write_problems.size() == 1);
        CHECK(report.write_problems[0].write.term == 7);
        CHECK(report.write_problems[0].why.find("stale term accepted") != std::string::npos);
    }

    TEST_CASE("the leader in office refused by the store fails") {
        // An earlier leader wrote a higher term: the next leader's writes are all refused.
        const auto report = check_election({lead(0, 7, 0, 100, 400), lead(1, 6, 500, 700, 900)},
                                           {wrote(0, 7, 50), wrote(1, 6, 510), wrote(1, 6, 520)});
        CHECK(report.inversions.size() == 1);
        CHECK(report.write_problems.size() == 2);
        CHECK(report.accepted == 1);
        const auto text = redlock_torture::describe_election_problems(report, 0, 10);
        CHECK(text.find("TERM NOT INCREASING") != std::string::npos);
        CHECK(text.find("the leader in office was refused") != std::string::npos);
    }

    TEST_CASE("records read back as they were written") {
        auto l = lead(3, 42, 10, 20, 30, lead_end::abandoned);
        l.writes = 7;
        l.lost_at_ns = 25;
        const auto parsed = redlock_torture::parse_lead(l.format());
        REQUIRE(parsed);
        CHECK(parsed->format() == l.format());
        const auto w = wrote(3, 42, 15, true);
        const auto back = redlock_torture::parse_write(w.format());
        REQUIRE(back);
        CHECK(back->format() == w.format());
        CHECK_FALSE(redlock_torture::parse_lead("lead worker=1 how=quit"));
        CHECK_FALSE(redlock_torture::parse_write("write worker=1 term=x at=1 late=0"));
    }
}
