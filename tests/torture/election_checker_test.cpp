// The election checker on made-up records: it must see what it is there to see.
#include "election_checker.hpp"

#include "election_record.hpp"
#include "observer_checker.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <vector>

using redlock_torture::check_election;
using redlock_torture::lead_end;
using redlock_torture::lead_record;
using redlock_torture::mark_record;
using redlock_torture::ns_per_ms;
using redlock_torture::seen_record;
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

auto wrote(int worker, std::uint64_t term, std::int64_t at_ms, bool late = false,
           std::int64_t until_ms = 0) -> write_record {
    return write_record{worker, term, at_ms * ns_per_ms, late, until_ms * ns_per_ms};
}

/// A killed leader's records: won at `start` ms valid until `until` ms, a write at `start` + 10
/// ms that saw its validity renewed to `renewed` ms, killed at `killed` ms.
auto killed_file(int worker, std::uint64_t term, std::int64_t start, std::int64_t until,
                 std::int64_t renewed, std::int64_t killed) -> redlock_torture::candidate_file {
    redlock_torture::candidate_file f;
    f.wons.push_back(
        {worker, term, (start - 5) * ns_per_ms, start * ns_per_ms, until * ns_per_ms, true, 500});
    f.writes.push_back(wrote(worker, term, start + 10, false, renewed));
    f.killed = mark_record{worker, 0, killed * ns_per_ms};
    return f;
}

/// Observer 0 told, at `at_ms`, of term `term` led by candidate `from` (term 0: no leader).
auto told(std::int64_t at_ms, std::uint64_t term = 0, int from = -1) -> seen_record {
    seen_record s;
    s.at_ns = at_ms * ns_per_ms;
    s.leader = term != 0;
    s.term = term;
    s.from = from;
    s.agreeing = 3;
    s.answered = 5;
    return s;
}

auto observed(const std::vector<seen_record>& seen, const std::vector<lead_record>& leads,
              std::optional<redlock_torture::final_stretch> stretch = std::nullopt,
              const std::vector<mark_record>& failed = {}) {
    return redlock_torture::check_observer(seen, leads, failed, stretch);
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

    TEST_CASE("a killed leader is made up from its records: its term and latest validity") {
        const auto killed =
            redlock_torture::killed_lead(killed_file(2, 8, 100, 600, 700, 300), "e");
        REQUIRE(killed);
        CHECK(killed->how == lead_end::killed);
        CHECK(killed->term == 8);
        CHECK(killed->end_ns == 300 * ns_per_ms);
        CHECK(killed->until_end_ns == 700 * ns_per_ms);  // renewed, as its write saw
        CHECK_FALSE(killed->stepping_down);
        auto stepping = killed_file(2, 8, 100, 600, 700, 300);
        stepping.endings.push_back({2, 8, 250 * ns_per_ms});
        const auto down = redlock_torture::killed_lead(stepping, "e");
        REQUIRE(down);
        CHECK(down->stepping_down);
        CHECK(down->end_ns == 250 * ns_per_ms);
        auto ended = killed_file(2, 8, 100, 600, 700, 300);
        ended.leads.push_back(lead(2, 8, 100, 200, 600));
        CHECK_FALSE(redlock_torture::killed_lead(ended, "e"));
        auto alive = killed_file(2, 8, 100, 600, 700, 300);
        alive.killed.reset();
        CHECK_FALSE(redlock_torture::killed_lead(alive, "e"));
    }

    TEST_CASE("the successor of a killed leader starts after the killed leader's validity") {
        const auto killed = *redlock_torture::killed_lead(killed_file(0, 4, 0, 500, 700, 200), "e");
        const auto after = check_election({killed, lead(1, 5, 720, 800, 1200)}, {});
        CHECK(after.ok());
        CHECK(after.killed_in_office == 1);
        CHECK(after.failovers_after_kill == 1);
        CHECK(after.shortest_kill_gap_ns == 20 * ns_per_ms);
        // At 650 ms: after the kill (200) and the validity at the win (500), but before the
        // renewed validity its write saw (700). The overlap check alone would let it pass.
        const auto early = check_election({killed, lead(1, 5, 650, 800, 1200)}, {});
        CHECK(early.overlaps.empty());
        REQUIRE(early.early_successors.size() == 1);
        CHECK(early.early_successors[0].overlap_ns == 50 * ns_per_ms);
        CHECK_FALSE(early.ok());
        CHECK(redlock_torture::describe_election_problems(early, 0, 10).find("AFTER A KILL") !=
              std::string::npos);
        // Killed while stepping down (it may have resigned): only the overlap check holds.
        auto stepping = killed_file(0, 4, 0, 500, 700, 200);
        stepping.endings.push_back({0, 4, 150 * ns_per_ms});
        const auto down = *redlock_torture::killed_lead(stepping, "e");
        CHECK(check_election({down, lead(1, 5, 160, 800, 1200)}, {}).ok());
    }

    TEST_CASE("an observer's terms never decrease, a report of no leader between or not") {
        const std::vector<lead_record> leads{lead(0, 3, 0, 100, 400), lead(1, 5, 200, 300, 600)};
        CHECK(
            observed({told(1), told(10, 3, 0), told(150), told(210, 5, 1), told(700)}, leads).ok());
        const auto back = observed({told(210, 5, 1), told(350), told(400, 3, 0), told(700)}, leads);
        REQUIRE(back.decreases.size() == 1);
        CHECK(back.decreases[0].seen.term == 3);
        CHECK(back.invented.empty());
    }

    TEST_CASE("an observer names no leader that no candidate was") {
        const std::vector<lead_record> leads{lead(0, 3, 100, 200, 400)};
        // A term nobody held, a term named for the wrong candidate, and one before its
        // candidate called campaign (at 95 ms).
        for (const auto& bad : {told(110, 4, 0), told(110, 3, 1), told(90, 3, 0)}) {
            const auto report = observed({bad, told(700)}, leads);
            CHECK(report.invented.size() == 1);
            CHECK_FALSE(report.ok());
        }
        // A term no candidate recorded, from a campaign of that candidate called before the
        // report (an attempt it gave up): accepted, and counted.
        const std::vector<mark_record> failed{{2, 0, 300 * ns_per_ms}};
        const auto unconfirmed = observed({told(310, 4, 2), told(700)}, leads, {}, failed);
        CHECK(unconfirmed.ok());
        CHECK(unconfirmed.unrecorded_seen == 1);
        CHECK(observed({told(290, 4, 2), told(700)}, leads, {}, failed).invented.size() == 1);
        CHECK(observed({told(310, 4, 1), told(700)}, leads, {}, failed).invented.size() == 1);
        CHECK(observed({told(310, 3, 2), told(700)}, leads, {}, failed).invented.size() == 1);
    }

    TEST_CASE("an observer is told of the final leader, then of no leader") {
        // Term 7 holds through the final stretch [1000, 4000] ms and resigns at 4100.
        const std::vector<lead_record> leads{lead(0, 6, 0, 500, 900, lead_end::abandoned),
                                             lead(1, 7, 950, 4100, 4500, lead_end::stopped)};
        const redlock_torture::final_stretch stretch{1000 * ns_per_ms, 4000 * ns_per_ms};
        const auto good = observed({told(10, 6, 0), told(960, 7, 1), told(4110)}, leads, stretch);
        CHECK(good.ok());
        CHECK(good.eventual_checked);
        CHECK(good.final_term == 7);
        // Still naming the killed-off term 6 at the stretch's end: the final leader was missed.
        const auto missed = observed({told(10, 6, 0), told(4110)}, leads, stretch);
        REQUIRE(missed.eventual.size() == 1);
        CHECK(missed.eventual[0].why.find("final leader") != std::string::npos);
        // The final leader told, but not its end.
        const auto stuck = observed({told(10, 6, 0), told(960, 7, 1)}, leads, stretch);
        CHECK(stuck.eventual.size() == 2);
        // A stretch no leadership spans checks only the last report.
        const auto unspanned = observed({told(10, 6, 0)}, {leads[0]}, stretch);
        CHECK_FALSE(unspanned.eventual_checked);
        CHECK(unspanned.eventual.size() == 1);
        CHECK(redlock_torture::describe_observer_problems(stuck, 0, 10).find("NOT TOLD") !=
              std::string::npos);
    }

    TEST_CASE("won, mark and seen records read back as they were written") {
        const redlock_torture::won_record won{1, 9, 5, 6, 7, true, 750};
        const auto w = redlock_torture::parse_won(won.format());
        REQUIRE(w);
        CHECK(w->format() == won.format());
        const mark_record mark{1, 9, 8};
        const auto m = redlock_torture::parse_mark(mark.format("ending"), "ending");
        REQUIRE(m);
        CHECK(m->format("ending") == mark.format("ending"));
        CHECK_FALSE(redlock_torture::parse_mark(mark.format("ending"), "killed"));
        auto seen = told(12, 9, 1);
        seen.proclaimed = 3;
        const auto s = redlock_torture::parse_seen(seen.format());
        REQUIRE(s);
        CHECK(s->format() == seen.format());
        CHECK(redlock_torture::candidate_of("candidate-12 at 5") == 12);
        CHECK(redlock_torture::candidate_of("candidate-3") == 3);
        CHECK(redlock_torture::candidate_of("someone") == -1);
        CHECK(redlock_torture::candidate_of("candidate-x") == -1);
    }
}
