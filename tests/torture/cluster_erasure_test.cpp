// A repeated term on cluster members (cluster_members_test.cpp): the members' faults, read as
// token_erasure.hpp's timeline (member_timeline.hpp), explain a repeat only when the members
// that may have missed the earlier leader's confirm and the members failed over by force
// before the later leader won are together a majority of the three.
#include "election_checker.hpp"
#include "election_record.hpp"
#include "member_timeline.hpp"
#include "token_erasure.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>

using redlock_torture::lead_record;
using redlock_torture::member_timeline;
using redlock_torture::term_inversion;

// A namespace of its own: a unity build puts this file beside token_erasure_test.cpp.
namespace cluster_erasure {

constexpr std::size_t members = 3;

auto lead(int candidate, std::uint64_t term, std::int64_t called, std::int64_t start)
    -> lead_record {
    lead_record r;
    r.worker = candidate;
    r.election = "torture:e";
    r.term = term;
    r.called_ns = called;
    r.start_ns = start;
    r.end_ns = start + 100;
    r.until_start_ns = r.until_end_ns = start + 200;
    r.valid_at_start = true;
    return r;
}

/// Candidate 1 campaigned over [1000, 1100] for term 9; candidate 2 won term 9 at 5000.
const term_inversion repeat{lead(1, 9, 1000, 1100), lead(2, 9, 4900, 5000)};

auto explained(const member_timeline& faults) -> bool {
    return redlock_torture::explain_repeat(faults.timeline(), repeat, members).within_limit;
}

}  // namespace cluster_erasure

TEST_CASE("cluster erasure: a member that missed the confirm and another failed over by force") {
    member_timeline faults;
    faults.fault("manual-failover", 0, 900, 4000);  // member 0 impaired during the campaign
    faults.fault("forced-failover", 1, 3000, 6000);
    faults.forced_kill(1, 3000);  // member 1's master SIGKILLed before candidate 2 won
    CHECK(cluster_erasure::explained(faults));
    const auto why = redlock_torture::explain_repeat(faults.timeline(), cluster_erasure::repeat,
                                                     cluster_erasure::members);
    CHECK(why.missed.contains(0));
    CHECK(why.emptied.contains(1));
}

TEST_CASE("cluster erasure: one member's faults alone explain nothing") {
    member_timeline faults;
    // A forced failover of member 1 during the campaign: it may have missed the confirm and
    // lost it, but it is one member of three.
    faults.fault("forced-failover", 1, 1050, 4000);
    faults.forced_kill(1, 1050);
    faults.fault("node-down", 1, 1050, 4500);
    CHECK_FALSE(cluster_erasure::explained(faults));
}

TEST_CASE("cluster erasure: faults that cannot have erased the term explain nothing") {
    member_timeline faults;
    faults.fault("move-slot", 0, 1000, 1200);  // member 0 may have missed the confirm
    SUBCASE("a manual failover empties nothing") {
        faults.fault("manual-failover", 1, 2000, 3000);
    }
    SUBCASE("a slot move empties nothing") {
        faults.fault("move-slot", 2, 2000, 2500);
    }
    SUBCASE("a forced failover over before the campaign") {
        faults.fault("forced-failover", 1, 100, 900);
        faults.forced_kill(1, 100);
    }
    SUBCASE("a forced failover after the later leader won") {
        faults.fault("forced-failover", 1, 5100, 8000);
        faults.forced_kill(1, 5100);
    }
    CHECK_FALSE(cluster_erasure::explained(faults));
}

TEST_CASE("cluster erasure: two members missed the confirm") {
    member_timeline faults;
    faults.fault("node-down", 0, 500, 1050);
    faults.fault("move-slot", 2, 1080, 1300);
    CHECK(cluster_erasure::explained(faults));
}

TEST_CASE("cluster erasure: the unexplained repeat stays in the report") {
    member_timeline faults;
    faults.fault("manual-failover", 0, 900, 4000);
    redlock_torture::election_report report;
    report.inversions.push_back(cluster_erasure::repeat);
    const auto taken = redlock_torture::take_explained_repeats(report, faults.timeline(),
                                                               cluster_erasure::members);
    CHECK(taken.empty());
    CHECK(report.inversions.size() == 1);
    faults.forced_kill(2, 2000);
    const auto now_taken = redlock_torture::take_explained_repeats(report, faults.timeline(),
                                                                   cluster_erasure::members);
    CHECK(now_taken.size() == 1);
    CHECK(report.inversions.empty());
}
