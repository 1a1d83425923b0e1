// The faults-log reading of a repeated term (token_erasure.hpp): a repeat is put down to the
// README's limit only when the faults could have erased the term.
#include "token_erasure.hpp"

#include "election_checker.hpp"
#include "election_record.hpp"
#include "record.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using redlock_torture::explain_erasure;
using redlock_torture::explain_repeat;
using redlock_torture::fault_timeline;
using redlock_torture::lead_record;
using redlock_torture::term_inversion;

namespace {

constexpr std::size_t five = 5;

auto timeline(const std::string& log) -> fault_timeline {
    std::istringstream in{log};
    return redlock_torture::parse_fault_log(in);
}

/// Candidate `worker` called its campaign at `called` ns and won `term` at `start` ns.
auto lead(int worker, std::uint64_t term, std::int64_t called, std::int64_t start) -> lead_record {
    lead_record r;
    r.worker = worker;
    r.election = "e";
    r.term = term;
    r.called_ns = called;
    r.start_ns = start;
    r.end_ns = start + 100;
    r.until_start_ns = r.until_end_ns = start + 200;
    r.valid_at_start = true;
    return r;
}

/// Candidate 1 (slot 0) won term 7 over [300, 400] ns, candidate 2 (slot 1) term 7 at 700 ns.
const term_inversion repeat{lead(1, 7, 300, 400), lead(2, 7, 650, 700)};
const std::string slots =
    "10 candidate-skip candidate=1 slot=0 pid=1\n10 candidate-skip candidate=2 slot=1 pid=2\n";
/// Nodes 3 and 4 (in memory) killed between the two, so restarted empty.
const std::string empties =
    "500 kill node=3 port=1 proxy=2 down_ms=1200 in-memory\n"
    "550 kill node=4 port=1 proxy=2 down_ms=1200 in-memory\n";

auto nodes_missed(const redlock_torture::repeat_explanation& why) -> std::set<std::size_t> {
    std::set<std::size_t> nodes;
    for (const auto& [node, f] : why.missed) nodes.insert(node);
    return nodes;
}

// faults.log of seed 191035883 (CI), from 46 s to the second leader of term 28 (53 s).
const std::string ci_run =
    "15528162645210 candidate-storm candidate=8 slot=2 pid=10752 span_ms=1460\n"
    "15528306507247 restart node=3 port=38935 proxy=44283\n"
    "15528312386354 latency-end node=1 port=44331 proxy=44823\n"
    "15528384612594 latency-end node=4 port=38063 proxy=42171\n"
    "15528472551131 latency node=4 port=38063 proxy=42171 ms=40 span_ms=1010\n"
    "15528796233037 skip node=0 port=54389 proxy=39489 freeze\n"
    "15528860416121 observer-storm-end observer=0 pid=10565\n"
    "15528887572931 skip node=2 port=34851 proxy=44159 latency\n"
    "15529032851839 candidate-storm-end candidate=5 slot=0 pid=10693\n"
    "15529178320323 candidate-skip candidate=8 slot=2 pid=10752\n"
    "15529432181246 latency node=1 port=44331 proxy=44823 ms=5 span_ms=1211\n"
    "15529482697831 latency-end node=4 port=38063 proxy=42171\n"
    "15529608439537 latency-end node=2 port=34851 proxy=44159\n"
    "15529623502363 candidate-storm-end candidate=8 slot=2 pid=10752\n"
    "15529642840474 drop node=2 port=34851 proxy=44159\n"
    "15529736656475 candidate-storm candidate=8 slot=2 pid=10752 span_ms=2033\n"
    "15529933879640 latency node=4 port=38063 proxy=42171 ms=2500 span_ms=1506\n"
    "15530252209342 skip node=4 port=38063 proxy=42171 kill\n"
    "15530310323110 latency node=0 port=54389 proxy=39489 ms=5 span_ms=564\n"
    "15530474734650 blackhole node=1 port=44331 proxy=44823 span_ms=1980\n"
    "15530620963389 candidate-skip candidate=8 slot=2 pid=10752\n"
    "15530644734376 latency-end node=1 port=44331 proxy=44823\n"
    "15530822171800 skip node=3 port=38935 proxy=44283 blackhole\n"
    "15530828953034 observer-storm observer=0 pid=10565 span_ms=2481\n"
    "15530876171596 latency-end node=0 port=54389 proxy=39489\n"
    "15531324046703 skip node=4 port=38063 proxy=42171 kill\n"
    "15531441026874 latency-end node=4 port=38063 proxy=42171\n"
    "15531501744294 kill node=2 port=34851 proxy=44159 down_ms=447 aof=always\n"
    "15531631798897 candidate-skip candidate=8 slot=2 pid=10752\n"
    "15531771200550 candidate-storm-end candidate=8 slot=2 pid=10752\n"
    "15531789946600 skip node=0 port=54389 proxy=39489 blackhole\n"
    "15531880472284 skip node=2 port=34851 proxy=44159 freeze\n"
    "15532073337397 restart node=2 port=34851 proxy=44159\n"
    "15532455602563 unblackhole node=1 port=44331 proxy=44823\n"
    "15532470602825 drop node=2 port=34851 proxy=44159\n"
    "15532765416371 kill node=4 port=38063 proxy=42171 down_ms=1293 in-memory\n"
    "15532985399866 candidate-partition candidate=7 slot=1 pid=10732 nodes=0,1,2 span_ms=2370\n"
    "15533310664106 observer-storm-end observer=0 pid=10565\n"
    "15533362859877 skip node=4 port=38063 proxy=42171 kill\n"
    "15533559040243 freeze node=3 port=38935 proxy=44283 pause_ms=260\n"
    "15533659215922 skip node=1 port=44331 proxy=44823 latency\n"
    "15533820871662 thaw node=3 port=38935 proxy=44283\n"
    "15533834188250 candidate-pause candidate=8 slot=2 pid=10752 span_ms=2221\n"
    "15534068273097 restart node=4 port=38063 proxy=42171\n"
    "15534106520404 observer-storm observer=0 pid=10565 span_ms=1557\n"
    "15534209283884 latency node=2 port=34851 proxy=44159 ms=1 span_ms=1849\n"
    "15534493494892 kill node=3 port=38935 proxy=44283 down_ms=1633 in-memory\n"
    "15534659821022 skip node=3 port=38935 proxy=44283 blackhole\n"
    "15534956474683 kill node=0 port=54389 proxy=39489 down_ms=1297 aof=always\n"
    "15535162186796 candidate-kill candidate=5 slot=0 pid=10693 term=28\n";
const term_inversion ci_repeat{lead(8, 28, 15530696503420, 15531832674081),
                               lead(5, 28, 15534795246468, 15535131035230)};

/// Worker `worker`'s fenced writer hold of 'torture:b' with `fence`, called and started as given.
auto hold(int worker, std::uint64_t fence, std::int64_t called, std::int64_t start)
    -> redlock_torture::hold_record {
    redlock_torture::hold_record h;
    h.worker = worker;
    h.resource = "torture:b";
    h.fence = fence;
    h.called_ns = called;
    h.start_ns = start;
    h.end_ns = start + 400'000'000;
    h.until_start_ns = h.until_end_ns = start + 600'000'000;
    h.valid_at_start = true;
    h.ttl_ms = 300;
    return h;
}

// faults.log of seed 307713696 (a hog run), 56.0 s to 64.1 s: worker 1's writer got token 30
// at 57.6 s while nodes 1 and 2 were blackholed, then again at 64.1 s after the in-memory
// nodes 3 and 4 had been killed. Candidate 8's storm (slot 2) reached no worker.
const std::string hog_run =
    "27441081786211 candidate-heal candidate=0 slot=0 pid=3948\n"
    "27441218172298 drop node=0 port=39645 proxy=40275\n"
    "27441297839812 blackhole node=2 port=54543 proxy=37465 span_ms=1343\n"
    "27441351004260 thaw node=1 port=39205 proxy=44677\n"
    "27441399656274 candidate-storm-end candidate=8 slot=2 pid=14686\n"
    "27441666806291 blackhole node=1 port=39205 proxy=44677 span_ms=1802\n"
    "27441757211201 skip node=3 port=47113 proxy=44639 blackhole\n"
    "27441896778739 skip node=0 port=39645 proxy=40275 freeze\n"
    "27442154678620 observer-heal observer=0 pid=3974\n"
    "27442192290461 candidate-storm candidate=8 slot=2 pid=14686 span_ms=1399\n"
    "27442358809678 latency node=1 port=39205 proxy=44677 ms=80 span_ms=2990\n"
    "27442531388209 latency node=3 port=47113 proxy=44639 ms=10 span_ms=1310\n"
    "27442642716413 unblackhole node=2 port=54543 proxy=37465\n"
    "27442924935334 observer-storm observer=0 pid=3974 span_ms=3826\n"
    "27443009938573 blackhole node=3 port=47113 proxy=44639 span_ms=577\n"
    "27443128275552 candidate-skip candidate=8 slot=2 pid=14686\n"
    "27443137079729 skip node=0 port=39645 proxy=40275 blackhole\n"
    "27443445710237 drop node=1 port=39205 proxy=44677\n"
    "27443469234421 unblackhole node=1 port=39205 proxy=44677\n"
    "27443589967224 unblackhole node=3 port=47113 proxy=44639\n"
    "27443592099692 candidate-storm-end candidate=8 slot=2 pid=14686\n"
    "27443757823578 freeze node=4 port=60625 proxy=45735 pause_ms=753\n"
    "27443843608051 latency-end node=3 port=47113 proxy=44639\n"
    "27443915046611 skip node=4 port=60625 proxy=45735 kill\n"
    "27444232562065 latency node=2 port=54543 proxy=37465 ms=10 span_ms=1307\n"
    "27444304740980 skip node=0 port=39645 proxy=40275 blackhole\n"
    "27444386456246 candidate-storm candidate=0 slot=0 pid=3948 span_ms=3778\n"
    "27444512230632 thaw node=4 port=60625 proxy=45735\n"
    "27444671544059 blackhole node=4 port=60625 proxy=45735 span_ms=1009\n"
    "27444729710997 candidate-storm candidate=7 slot=1 pid=12765 span_ms=1143\n"
    "27445170268711 skip node=1 port=39205 proxy=44677 blackhole\n"
    "27445349721512 latency-end node=1 port=39205 proxy=44677\n"
    "27445551098191 latency-end node=2 port=54543 proxy=37465\n"
    "27445596806550 latency node=1 port=39205 proxy=44677 ms=10 span_ms=1574\n"
    "27445686009617 unblackhole node=4 port=60625 proxy=45735\n"
    "27445711195252 kill node=3 port=47113 proxy=44639 down_ms=1711 in-memory\n"
    "27445874193564 candidate-storm-end candidate=7 slot=1 pid=12765\n"
    "27445899127012 candidate-skip candidate=0 slot=0 pid=3948\n"
    "27445999690833 skip node=3 port=47113 proxy=44639 freeze\n"
    "27446209046317 latency node=3 port=47113 proxy=44639 ms=5 span_ms=2184\n"
    "27446321799588 kill node=4 port=60625 proxy=45735 down_ms=1465 in-memory\n"
    "27446563047577 candidate-skip candidate=0 slot=0 pid=3948\n"
    "27446721642751 skip node=0 port=39645 proxy=40275 blackhole\n"
    "27446752690535 observer-storm-end observer=0 pid=3974\n"
    "27447172085459 latency-end node=1 port=39205 proxy=44677\n"
    "27447182701130 skip node=2 port=54543 proxy=37465 blackhole\n"
    "27447406631866 drop node=3 port=47113 proxy=44639\n"
    "27447564038789 restart node=3 port=47113 proxy=44639\n"
    "27447755970600 skip node=3 port=47113 proxy=44639 latency\n"
    "27447944428007 restart node=4 port=60625 proxy=45735\n"
    "27447949365399 candidate-storm candidate=7 slot=1 pid=12765 span_ms=1923\n"
    "27447954417045 drop node=1 port=39205 proxy=44677\n"
    "27448028760916 freeze node=1 port=39205 proxy=44677 pause_ms=395\n"
    "27448165087846 candidate-storm-end candidate=0 slot=0 pid=3948\n"
    "27448212655994 kill node=0 port=39645 proxy=40275 down_ms=1188 aof=always\n"
    "27448395217129 latency-end node=3 port=47113 proxy=44639\n"
    "27448425456500 thaw node=1 port=39205 proxy=44677\n"
    "27448490073436 observer-partition observer=0 pid=3974 nodes=1,2,3 span_ms=1887\n"
    "27448764197389 blackhole node=2 port=54543 proxy=37465 span_ms=906\n";
constexpr std::int64_t hog_origin = 27385023501270;
const redlock_torture::inversion hog_repeat{
    hold(1, 30, hog_origin + 57'292'461'000, hog_origin + 57'603'032'000),
    hold(1, 30, hog_origin + 63'751'934'000, hog_origin + 64'054'196'000)};

}  // namespace

TEST_SUITE("torture token erasure") {
    TEST_CASE(
        "the hog run's repeated lock token 30 is within the limit, and no candidate fault counts") {
        redlock_torture::check_report report;
        const redlock_torture::inversion lone{hold(2, 9, 800, 900), hold(3, 9, 950, 1000)};
        report.inversions = {hog_repeat, lone};
        const auto explained = take_explained_inversions(report, timeline(hog_run), five);
        REQUIRE(explained.size() == 1);
        const auto& why = explained[0].why;
        CHECK(why.emptied == std::set<std::size_t>{3, 4});
        CHECK(nodes_missed(why) == std::set<std::size_t>{1, 2, 3});  // not 0 or 4: the storm
        CHECK(why.missed.at(2).kind == "blackhole");
        REQUIRE(report.inversions.size() == 1);  // the one the faults do not explain stays
        CHECK(report.inversions[0].earlier.worker == 2);
        const auto text = describe_explained_inversions(explained, hog_origin, 10);
        CHECK(text.find("tokens not rising within the README's limit") != std::string::npos);
        CHECK(text.find("confirm of token 30: 1 (") != std::string::npos);
        CHECK(text.find("before the second won: 3 4") != std::string::npos);
        // Were the holder a candidate in slot 2, its storm would have cut it off everywhere.
        const auto as_candidate = explain_erasure(timeline(hog_run),
                                                  {.called_ns = hog_repeat.earlier.called_ns,
                                                   .confirmed_ns = hog_repeat.earlier.start_ns,
                                                   .next_start_ns = hog_repeat.later.start_ns,
                                                   .candidate = 8},
                                                  five);
        CHECK(nodes_missed(as_candidate) == std::set<std::size_t>{0, 1, 2, 3, 4});
    }

    TEST_CASE("a lock token repeat is unexplained when only in-memory kills came between") {
        redlock_torture::check_report report;
        report.inversions = {{hold(1, 5, 300, 400), hold(2, 5, 650, 700)}};
        CHECK(take_explained_inversions(report, timeline(empties), five).empty());
        CHECK(report.inversions.size() == 1);
    }

    TEST_CASE("the CI run's repeated term 28 is within the limit, for the faults it names") {
        const auto why = explain_repeat(timeline(ci_run), ci_repeat, five);
        CHECK(why.within_limit);
        CHECK(why.emptied == std::set<std::size_t>{3, 4});
        // Candidate 8's own reconnect storm covered its whole campaign: every node.
        CHECK(nodes_missed(why) == std::set<std::size_t>{0, 1, 2, 3, 4});
        CHECK(why.missed.at(1).kind == "blackhole");
        CHECK(why.missed.at(2).kind == "kill");
        CHECK(why.missed.at(4).kind == "latency");
        CHECK(why.missed.at(3).kind == "candidate-storm");
        // Without the storm, the node faults alone: 1 blackholed, 2 killed, 0 and 4 slowed.
        std::string calm;
        std::istringstream lines{ci_run};
        for (std::string line; std::getline(lines, line);)
            if (line.find("candidate=8") == std::string::npos) calm += line + "\n";
        const auto node_only = explain_repeat(timeline(calm), ci_repeat, five);
        CHECK(nodes_missed(node_only) == std::set<std::size_t>{0, 1, 2, 4});
        CHECK(node_only.within_limit);
    }

    TEST_CASE("two nodes missed or emptied are not a majority of five") {
        const auto faults = timeline(slots +
                                     "350 blackhole node=1 port=1 proxy=2 span_ms=100\n"
                                     "450 unblackhole node=1 port=1 proxy=2\n"
                                     "550 kill node=4 port=1 proxy=2 down_ms=1200 in-memory\n");
        const auto why = explain_repeat(faults, repeat, five);
        CHECK(nodes_missed(why) == std::set<std::size_t>{1});
        CHECK(why.emptied == std::set<std::size_t>{4});
        CHECK_FALSE(why.within_limit);
        // The same node in both sets counts once.
        const auto again = timeline(slots + "350 kill node=4 port=1 proxy=2 down_ms=9 in-memory\n" +
                                    "380 restart node=4 port=1 proxy=2\n" + empties);
        CHECK_FALSE(explain_repeat(again, repeat, five).within_limit);
    }

    TEST_CASE("another candidate's partition does not count, the leader's own does") {
        const auto cut = [](const std::string& who) {
            return "350 candidate-partition " + who + " pid=2 nodes=0,1,2 span_ms=9\n" +
                   "420 candidate-heal " + who + " pid=2\n";
        };
        const auto other =
            explain_repeat(timeline(slots + cut("candidate=2 slot=1") + empties), repeat, five);
        CHECK(other.missed.empty());
        CHECK_FALSE(other.within_limit);
        const auto own =
            explain_repeat(timeline(slots + cut("candidate=1 slot=0") + empties), repeat, five);
        CHECK(nodes_missed(own) == std::set<std::size_t>{0, 1, 2});
        CHECK(own.within_limit);
    }

    TEST_CASE("a slot's fault reaches the candidate that replaced a killed one") {
        // Opened for candidate 5, closed under the name of its replacement, candidate 1.
        const auto faults = timeline(
            "100 candidate-partition candidate=5 slot=0 pid=5 nodes=0 span_ms=9\n"
            "200 candidate-kill candidate=5 slot=0 pid=5 term=6\n"
            "200 candidate-replaced candidate=1 slot=0 pid=6\n"
            "450 candidate-heal candidate=1 slot=0 pid=6\n" +
            empties);
        const auto why = explain_repeat(faults, repeat, five);
        CHECK(nodes_missed(why) == std::set<std::size_t>{0});
        CHECK(why.within_limit);
    }

    TEST_CASE("faults outside the campaign and kills before it do not count") {
        // Ended 1 ns before the call; began 1 ns after the win; a drop before the call; an
        // in-memory node killed and restarted before the call.
        const auto faults = timeline(slots +
                                     "50 kill node=3 port=1 proxy=2 down_ms=9 in-memory\n"
                                     "100 blackhole node=0 port=1 proxy=2 span_ms=9\n"
                                     "150 restart node=3 port=1 proxy=2\n"
                                     "250 drop node=2 port=1 proxy=2\n"
                                     "299 unblackhole node=0 port=1 proxy=2\n"
                                     "401 latency node=1 port=1 proxy=2 ms=5 span_ms=9\n"
                                     "550 kill node=4 port=1 proxy=2 down_ms=1200 in-memory\n");
        const auto why = explain_repeat(faults, repeat, five);
        CHECK(why.missed.empty());
        CHECK(why.emptied == std::set<std::size_t>{4});
        CHECK_FALSE(why.within_limit);
        // At the edges they do: a fault ending at the call, a reset at the win.
        const auto edges = timeline(slots +
                                    "100 blackhole node=0 port=1 proxy=2 span_ms=9\n"
                                    "300 unblackhole node=0 port=1 proxy=2\n"
                                    "400 reset node=1 port=1 proxy=2\n" +
                                    empties);
        CHECK(nodes_missed(explain_repeat(edges, repeat, five)) == std::set<std::size_t>{0, 1});
        CHECK(explain_repeat(edges, repeat, five).within_limit);
    }

    TEST_CASE("a persistent node's kill empties nothing") {
        const auto faults = timeline(slots +
                                     "350 blackhole node=1 port=1 proxy=2 span_ms=100\n"
                                     "450 unblackhole node=1 port=1 proxy=2\n"
                                     "500 kill node=0 port=1 proxy=2 down_ms=9 aof=always\n"
                                     "600 restart node=0 port=1 proxy=2\n"
                                     "550 kill node=4 port=1 proxy=2 down_ms=9 in-memory\n");
        const auto why = explain_repeat(faults, repeat, five);
        CHECK(why.emptied == std::set<std::size_t>{4});
        CHECK_FALSE(why.within_limit);
    }

    TEST_CASE("lines with bare words, heals of every fault at once, unreadable lines") {
        const auto t = timeline(
            "1 start seed=5\n"
            "100 kill node=3 port=1 proxy=2 down_ms=1200 in-memory\n"
            "150 kill node=4 port=1 proxy=2 down_ms=10 in-memory undelayed\n"
            "200 kill node=0 port=1 proxy=2 down_ms=10 aof=always\n"
            "250 skip node=2 port=1 proxy=2 blackhole\n"
            "260 blackhole node=1 port=1 proxy=2 span_ms=900\n"
            "270 candidate-storm candidate=3 slot=2 pid=9 span_ms=900\n"
            "300 restart node=3 port=1 proxy=2\n"
            "400 healed-proxies node=0 port=1 proxy=2\n"
            "410 candidate-healed candidate=0 slot=0 pid=8\n"
            "garbage\n"
            "x12 kill node=1 port=1 proxy=2\n"
            "420 freeze node=first port=1 proxy=2 pause_ms=9\n"
            "430 candidate-partition candidate=2 slot=1 pid=3 nodes=0,x span_ms=1\n"
            "500 workers stopped (all=1)\n");
        CHECK(t.in_memory_kills ==
              std::vector<std::pair<std::int64_t, std::size_t>>{{100, 3}, {150, 4}});
        REQUIRE(t.faults.size() == 5);
        CHECK(t.faults[0].to_ns == 300);                                       // restarted
        CHECK(t.faults[1].to_ns == std::numeric_limits<std::int64_t>::max());  // never
        CHECK(t.faults[3].kind == "blackhole");
        CHECK(t.faults[3].to_ns == 400);  // the proxies were healed, not the kills
        CHECK(t.slot_of.at(3) == 2);
        CHECK(t.faults[4].slot == std::optional<std::size_t>{2});
        CHECK(t.faults[4].to_ns == 410);
        CHECK(t.unreadable == 4);
    }

    TEST_CASE("the explained repeats leave the report, the rest stay inversions") {
        redlock_torture::election_report report;
        const term_inversion lone{lead(1, 9, 800, 900), lead(2, 9, 950, 1000)};
        report.inversions = {repeat, lone};
        const auto faults = timeline(slots +
                                     "350 blackhole node=1 port=1 proxy=2 span_ms=100\n"
                                     "450 unblackhole node=1 port=1 proxy=2\n" +
                                     empties);
        const auto explained = take_explained_repeats(report, faults, five);
        REQUIRE(explained.size() == 1);
        CHECK(explained[0].repeat.earlier.start_ns == 400);
        REQUIRE(report.inversions.size() == 1);
        CHECK(report.inversions[0].earlier.start_ns == 900);
        const auto text = describe_explained_repeats(explained, 0, 10);
        CHECK(text.find("README's limit") != std::string::npos);
        CHECK(text.find("confirm round): 1") != std::string::npos);
        CHECK(text.find("1 (blackhole [") != std::string::npos);
        CHECK(text.find("before the second won: 3 4") != std::string::npos);
        const auto problems = describe_election_problems(report, 0, 10);
        CHECK(problems.find("TERM NOT INCREASING") != std::string::npos);
        CHECK(problems.find("term 9") != std::string::npos);
        CHECK(problems.find("term 7") == std::string::npos);
    }
}
