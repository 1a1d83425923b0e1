// The CLI stress test's checks on made-up section records, of every lock kind: they must
// see what they are there to see before the invocations can mix kinds (cli_stress_argv.hpp).
#include "cli_stress_check.hpp"

#include "cli_stress_argv.hpp"
#include "record.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using redlock_torture::check_sections;
using redlock_torture::hold_kind;
using redlock_torture::ns_per_ms;
using redlock_torture::section_record;

namespace {

auto section(int id, hold_kind kind, const char* fence, std::int64_t begin_ms, std::int64_t end_ms)
    -> section_record {
    return {id, kind, fence, begin_ms * ns_per_ms, end_ms * ns_per_ms};
}

auto writer(int id, const char* fence, std::int64_t begin_ms, std::int64_t end_ms) {
    return section(id, hold_kind::writer, fence, begin_ms, end_ms);
}
auto reader(int id, const char* fence, std::int64_t begin_ms, std::int64_t end_ms) {
    return section(id, hold_kind::reader, fence, begin_ms, end_ms);
}
auto permit(int id, std::int64_t begin_ms, std::int64_t end_ms, const char* which = "-") {
    return section(id, hold_kind::permit, which, begin_ms, end_ms);
}
auto leader(int id, const char* term, std::int64_t begin_ms, std::int64_t end_ms) {
    auto s = section(id, hold_kind::writer, term, begin_ms, end_ms);
    s.leader = true;
    return s;
}

auto whats(const std::vector<redlock_torture::section_problem>& problems)
    -> std::vector<std::string> {
    std::vector<std::string> out;
    for (const auto& p : problems) out.push_back(p.what);
    return out;
}

}  // namespace

TEST_SUITE("cli stress checks") {
    TEST_CASE("writers in turn, readers together, and two permits at once pass") {
        const auto problems = check_sections(
            {writer(0, "1", 0, 10), reader(1, "1", 10, 40), reader(2, "1", 20, 50),
             writer(3, "2", 50, 60), permit(4, 0, 30), permit(5, 5, 35), permit(6, 30, 40)},
            2);
        CHECK(problems.empty());
    }

    TEST_CASE("a writer overlapping a reader or a writer is an overlap") {
        auto problems = check_sections({reader(0, "1", 0, 30), writer(1, "2", 20, 40)}, 2);
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].what == "overlap");
        REQUIRE(problems[0].sections.size() == 2);
        CHECK(problems[0].sections[0].invocation == 0);
        CHECK(problems[0].sections[1].invocation == 1);
        problems = check_sections({writer(0, "1", 0, 30), writer(1, "2", 10, 20)}, 2);
        CHECK(whats(problems) == std::vector<std::string>{"overlap"});
        problems = check_sections({writer(0, "1", 0, 30), reader(1, "1", 29, 40)}, 2);
        CHECK(whats(problems) == std::vector<std::string>{"overlap"});
    }

    TEST_CASE("a third permit at once is one too many for 2, not for 3") {
        const std::vector<section_record> three{permit(0, 0, 30), permit(1, 10, 40),
                                                permit(2, 20, 25)};
        const auto problems = check_sections(three, 2);
        REQUIRE(problems.size() == 1);
        CHECK(problems[0].what == "more than 2 permits");
        CHECK(problems[0].sections.size() == 3);
        CHECK(check_sections(three, 3).empty());
        // Two holders of one named permit overlap, even within K; a permit past K is none.
        CHECK(whats(check_sections({permit(0, 0, 30, "1"), permit(1, 10, 40, "1")}, 2)) ==
              std::vector<std::string>{"overlap"});
        CHECK(check_sections({permit(0, 0, 30, "0"), permit(1, 10, 40, "1")}, 2).empty());
        CHECK(whats(check_sections({permit(0, 0, 30, "2")}, 2)) ==
              std::vector<std::string>{"no such permit"});
        // Permits are not checked against the readers and writers (their own keys).
        CHECK(check_sections({writer(0, "1", 0, 30), permit(1, 10, 20)}, 1).empty());
    }

    TEST_CASE("a permit=3 of permits=2 is a safety finding, and its holder still counts") {
        // Issue 36 as cli_stress saw it: "no such permit: invocation 67 permit 3".
        const auto problems = check_sections(
            {permit(0, 0, 30, "0"), permit(1, 5, 35, "1"), permit(2, 10, 20, "3")}, 2);
        CHECK(whats(problems) == std::vector<std::string>{"no such permit", "more than 2 permits"});
        REQUIRE(problems[0].sections.size() == 1);
        CHECK(problems[0].sections[0].invocation == 2);
        CHECK(redlock_torture::describe(problems[0].sections[0], 0) ==
              "invocation 2 permit 3 [10.000, 20.000] ms");
        CHECK(problems[1].sections.size() == 3);
        // Below 0, or not a number: no such permit either.
        CHECK(whats(check_sections({permit(0, 0, 30, "-1")}, 2)) ==
              std::vector<std::string>{"no such permit"});
        CHECK(whats(check_sections({permit(0, 0, 30, "x")}, 2)) ==
              std::vector<std::string>{"no such permit"});
    }

    TEST_CASE("a writer's fence 0 is a safety finding, a reader's is not") {
        CHECK(whats(check_sections({writer(0, "0", 0, 10)}, 2)) ==
              std::vector<std::string>{"fence 0"});
        // A reader before any writer reads the counter as it is: 0.
        CHECK(check_sections({reader(0, "0", 0, 10), writer(1, "1", 10, 20)}, 2).empty());
    }

    TEST_CASE("fences: writers strictly increase, readers keep up, both must have one") {
        CHECK(whats(check_sections({writer(0, "5", 0, 10), writer(1, "5", 20, 30)}, 2)) ==
              std::vector<std::string>{"fence not increasing"});
        CHECK(whats(check_sections({writer(0, "5", 0, 10), reader(1, "4", 20, 30)}, 2)) ==
              std::vector<std::string>{"fence not increasing"});
        CHECK(check_sections({writer(0, "5", 0, 10), reader(1, "5", 20, 30)}, 2).empty());
        CHECK(whats(check_sections({writer(0, "-", 0, 10)}, 2)) ==
              std::vector<std::string>{"no fence"});
        CHECK(whats(check_sections({reader(0, "x", 0, 10)}, 2)) ==
              std::vector<std::string>{"no fence"});
    }

    TEST_CASE("leaders: one at a time, terms strictly increasing, apart from the lock's") {
        CHECK(check_sections(
                  {leader(0, "1", 0, 10), leader(1, "2", 10, 20), leader(2, "7", 30, 40)}, 2)
                  .empty());
        auto problems = check_sections({leader(0, "3", 0, 30), leader(1, "4", 20, 40)}, 2);
        REQUIRE(whats(problems) == std::vector<std::string>{"leaders overlap"});
        CHECK(problems[0].sections[0].invocation == 0);
        CHECK(problems[0].sections[1].leader);
        // A repeated term, or a lower one, from one leader to the next.
        CHECK(whats(check_sections({leader(0, "5", 0, 10), leader(1, "5", 20, 30)}, 2)) ==
              std::vector<std::string>{"term not increasing"});
        CHECK(whats(check_sections({leader(0, "5", 0, 10), leader(1, "4", 20, 30)}, 2)) ==
              std::vector<std::string>{"term not increasing"});
        CHECK(whats(check_sections({leader(0, "0", 0, 10)}, 2)) ==
              std::vector<std::string>{"term 0"});
        CHECK(whats(check_sections({leader(0, "-", 0, 10)}, 2)) ==
              std::vector<std::string>{"no term"});
        // An election is a lock of its own: its leaders are not the writers' rivals, nor do
        // its terms order the writers' fences.
        CHECK(check_sections({writer(0, "9", 0, 30), leader(1, "1", 10, 20), reader(2, "9", 40, 50),
                              leader(3, "2", 40, 50)},
                             2)
                  .empty());
        CHECK(redlock_torture::describe(leader(4, "12", 1, 2), 0) ==
              "invocation 4 leader term 12 [1.000, 2.000] ms");
    }

    TEST_CASE("sections are matched with exit codes: 0 must have one, 69 and 75 none") {
        const std::map<int, section_record> sections{
            {1, writer(1, "1", 0, 10)}, {2, leader(2, "1", 0, -1)}, {3, leader(3, "2", 20, 30)}};
        // 4 exited 0 without a record, 2 with half of one; 3 was not leading, yet ran.
        const auto matched =
            redlock_torture::match_sections(sections, {{1, 0}, {2, 0}, {3, 75}, {4, 0}}, 0);
        REQUIRE(matched.held.size() == 1);
        CHECK(matched.held[0].invocation == 1);
        CHECK(matched.mismatches ==
              std::vector<std::string>{
                  "invocation 2 exited 0 without a complete section record",
                  "invocation 3 exited 75 (not acquired) but its section ran: invocation 3 leader "
                  "term 2 [20.000, 30.000] ms",
                  "invocation 4 exited 0 without a complete section record"});
    }

    TEST_CASE("incomplete records are left to the caller's record check") {
        CHECK(check_sections({writer(0, "1", 0, 30), section(1, hold_kind::writer, "2", 10, -1)}, 2)
                  .empty());
    }

    TEST_CASE("section records of every kind are read back, a bad kind is unreadable") {
        const auto file = std::filesystem::temp_directory_path() /
                          ("cli-stress-check-" + std::to_string(::getpid()) + ".sections");
        std::ofstream{file} << "begin 1 reader 7 100\nbegin 2 permit - 110\nend 1 reader 7 150\n"
                               "end 2 permit - 160\nbegin 3 boss 1 170\nbegin 4 writer 8 180\n"
                               "end 4 reader 8 190\nbegin 5 leader 9 200\nend 5 leader 9 210\n"
                               "begin 6 leader 10 220\nend 6 writer 10 230\n";
        std::map<int, section_record> sections;
        std::vector<std::string> lines;
        // "boss"; 4's kinds; 6's (a leader is not a plain writer)
        CHECK(redlock_torture::read_sections(file, sections, &lines) == 3);
        std::filesystem::remove(file);
        // Each printed whole, after its file's name.
        const auto name = file.filename().string();
        CHECK(lines == std::vector<std::string>{name + ": begin 3 boss 1 170",
                                                name + ": end 4 reader 8 190",
                                                name + ": end 6 writer 10 230"});
        REQUIRE(sections.count(5) == 1);
        CHECK(sections[5].leader);
        CHECK(sections[5].kind == hold_kind::writer);
        CHECK(std::string{redlock_torture::section_kind(sections[5])} == "leader");
        CHECK(sections[5].fence == "9");
        CHECK(sections[5].end_ns == 210);
        CHECK_FALSE(sections[1].leader);
        REQUIRE(sections.count(1) == 1);
        CHECK(sections[1].kind == hold_kind::reader);
        CHECK(sections[1].fence == "7");
        CHECK(sections[1].end_ns == 150);
        CHECK(sections[2].kind == hold_kind::permit);
        CHECK(sections[2].fence == "-");
        CHECK(sections.count(3) == 0);
    }

    TEST_CASE("a section naming an impossible permit is read, for the checks to judge") {
        const auto file = std::filesystem::temp_directory_path() /
                          ("cli-stress-permit-" + std::to_string(::getpid()) + ".sections");
        std::ofstream{file} << "begin 67 permit 3 100\nend 67 permit 3 150\n";
        std::map<int, section_record> sections;
        std::vector<std::string> lines;
        CHECK(redlock_torture::read_sections(file, sections, &lines) == 0);
        std::filesystem::remove(file);
        CHECK(lines.empty());
        REQUIRE(sections.count(67) == 1);
        CHECK(whats(check_sections({sections[67]}, 2)) ==
              std::vector<std::string>{"no such permit"});
    }

    TEST_CASE("each kind's command line asks redlock run for it") {
        const redlock_torture::binaries bin{"/bin/redlock", "/bin/section"};
        auto argv = [&](hold_kind kind) {
            return redlock_torture::invocation_argv(bin, "c.json", "s", "res",
                                                    {7, 20, 3000, 1500, kind, false});
        };
        auto has = [](const std::vector<std::string>& v, const std::string& word) {
            return std::find(v.begin(), v.end(), word) != v.end();
        };
        const auto w = argv(hold_kind::writer);
        CHECK(has(w, "--fence"));
        CHECK_FALSE(has(w, "--shared"));
        CHECK_FALSE(has(w, "--permits"));
        CHECK(has(w, "res"));
        CHECK(w.back() == "writer");
        const auto r = argv(hold_kind::reader);
        CHECK(has(r, "--shared"));
        CHECK(has(r, "--fence"));
        CHECK(r.back() == "reader");
        const auto p = argv(hold_kind::permit);
        CHECK(has(p, "--permits"));
        CHECK(has(p, std::to_string(redlock_torture::cli_stress_permits)));
        CHECK_FALSE(has(p, "--fence"));  // a semaphore has no token
        CHECK(has(p, "res-pool"));
        CHECK(p.back() == "permit");
        // Everything after "--" is the section's: FILE INVOCATION DURATION_MS KIND.
        const auto dashes = std::find(p.begin(), p.end(), "--");
        REQUIRE(std::distance(dashes, p.end()) == 6);
        CHECK(*(dashes + 3) == "7");
        CHECK(*(dashes + 4) == "20");
        // Half writers, a quarter of each other kind.
        CHECK(redlock_torture::kind_of_draw(0) == hold_kind::writer);
        CHECK(redlock_torture::kind_of_draw(1) == hold_kind::writer);
        CHECK(redlock_torture::kind_of_draw(2) == hold_kind::reader);
        CHECK(redlock_torture::kind_of_draw(3) == hold_kind::permit);
        CHECK(redlock_torture::mix_kinds_by_default);  // the CLI has --shared and --permits
    }

    TEST_CASE("an elect invocation campaigns in its election and runs a leader's section") {
        const redlock_torture::binaries bin{"/bin/redlock", "/bin/section"};
        const auto e = redlock_torture::elect_argv(bin, "c.json", "s", "vote",
                                                   {9, 30, 3000, 1500, hold_kind::permit, true});
        const std::vector<std::string> expected{
            "/bin/redlock", "--config",  "c.json", "elect", "--name",       "vote", "--ttl-ms",
            "1500",         "--wait-ms", "3000",   "--",    "/bin/section", "s",    "9",
            "30",           "leader"};
        CHECK(e == expected);  // the plan's kind and fair mode are not elect's
    }
}
