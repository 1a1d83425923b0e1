// The torture checker on made-up records: it must see what it is there to see.
#include "checker.hpp"

#include "record.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using redlock_torture::check_holds;
using redlock_torture::hold_kind;
using redlock_torture::hold_record;
using redlock_torture::hold_via;
using redlock_torture::ns_per_ms;

namespace {

auto hold(int worker, const char* resource, std::uint64_t fence, std::int64_t start_ms,
          std::int64_t end_ms, std::int64_t until_ms) -> hold_record {
    hold_record r;
    r.worker = worker;
    r.resource = resource;
    r.fence = fence;
    r.called_ns = (start_ms - 5) * ns_per_ms;
    r.start_ns = start_ms * ns_per_ms;
    r.end_ns = end_ms * ns_per_ms;
    r.until_start_ns = until_ms * ns_per_ms;
    r.until_end_ns = until_ms * ns_per_ms;
    r.valid_at_start = true;
    r.valid_at_end = end_ms < until_ms;
    r.ttl_ms = 1000;
    return r;
}

auto reader(int worker, const char* resource, std::uint64_t fence, std::int64_t start_ms,
            std::int64_t end_ms, std::int64_t until_ms) -> hold_record {
    auto r = hold(worker, resource, fence, start_ms, end_ms, until_ms);
    r.kind = hold_kind::reader;
    return r;
}

/// Permit `permit` of a semaphore of `k`; a permit has no token.
auto permit(int worker, const char* resource, int k, int permit, std::int64_t start_ms,
            std::int64_t end_ms, std::int64_t until_ms) -> hold_record {
    auto r = hold(worker, resource, 0, start_ms, end_ms, until_ms);
    r.kind = hold_kind::permit;
    r.fenced = false;
    r.permits = k;
    r.permit = permit;
    return r;
}

/// A writer without a fencing token: one a release may hand its lock over to.
auto unfenced(int worker, const char* resource, std::int64_t start_ms, std::int64_t end_ms,
              std::int64_t until_ms) -> hold_record {
    auto r = hold(worker, resource, 0, start_ms, end_ms, until_ms);
    r.fenced = false;
    return r;
}

/// A reentrant lock's hold: a writer with a token, from its first acquire to its last release.
auto reentrant(int worker, const char* resource, std::uint64_t fence, std::int64_t start_ms,
               std::int64_t end_ms, std::int64_t until_ms) -> hold_record {
    auto r = hold(worker, resource, fence, start_ms, end_ms, until_ms);
    r.via = hold_via::reentrant;
    return r;
}

/// A lock in session `session`: a writer without a token, auto-renewed by the session.
auto in_session(int worker, const char* resource, const char* session, std::int64_t start_ms,
                std::int64_t end_ms, std::int64_t until_ms) -> hold_record {
    auto r = unfenced(worker, resource, start_ms, end_ms, until_ms);
    r.via = hold_via::session;
    r.session = session;
    r.auto_renew = true;
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
        CHECK(report.overlaps[0].overlap_ns == 50 * ns_per_ms);
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
        r.lost_at_ns = 25 * ns_per_ms;
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

TEST_SUITE("torture checker: lock kinds") {
    TEST_CASE("readers that overlap each other pass, and are seen to") {
        const auto report =
            check_holds({reader(0, "rw", 3, 0, 400, 900), reader(1, "rw", 3, 100, 500, 1000),
                         reader(2, "rw", 3, 200, 300, 1100), hold(3, "rw", 4, 600, 700, 1500)});
        CHECK(report.ok());
        CHECK(report.most_at_once.at("rw") == 3);
        CHECK(report.holds_per_kind.at("reader") == 3);
        CHECK(report.holds_per_kind.at("writer") == 1);
    }

    TEST_CASE("a writer overlapping a reader is found, the writer first or second") {
        // The reader started while the writer believed it held.
        auto report =
            check_holds({hold(0, "rw", 1, 0, 100, 900), reader(1, "rw", 1, 50, 300, 1000)});
        REQUIRE(report.overlaps.size() == 1);
        CHECK(report.overlaps[0].earlier.kind == hold_kind::writer);
        CHECK(report.overlaps[0].later.kind == hold_kind::reader);
        CHECK(report.overlaps[0].overlap_ns == 50 * ns_per_ms);
        // The writer started while a reader held; a shorter reader in between hides nothing.
        report = check_holds({reader(0, "rw", 1, 0, 500, 900), reader(1, "rw", 1, 10, 20, 900),
                              hold(2, "rw", 2, 400, 600, 1300)});
        REQUIRE(report.overlaps.size() == 1);
        CHECK(report.overlaps[0].earlier.worker == 0);
        CHECK(report.overlaps[0].later.worker == 2);
        CHECK(report.overlaps[0].overlap_ns == 100 * ns_per_ms);
        CHECK(report.inversions.empty());
    }

    TEST_CASE("a reader is checked against its validity, not its section") {
        // Reader 0's validity ended at 200: the writer at 300 is fine, at 150 it is not.
        const auto late = reader(0, "rw", 1, 0, 500, 200);
        CHECK(check_holds({late, hold(1, "rw", 2, 300, 400, 1300)}).ok());
        CHECK(check_holds({late, hold(1, "rw", 2, 150, 400, 1300)}).overlaps.size() == 1);
    }

    TEST_CASE("tokens: writers strictly increase among writers, a reader keeps up") {
        // A reader shares the last writer's token; the next writer goes above it.
        CHECK(check_holds({hold(0, "rw", 5, 0, 100, 900), reader(1, "rw", 5, 200, 300, 1200),
                           reader(2, "rw", 7, 250, 350, 1200), hold(3, "rw", 6, 400, 500, 1300)})
                  .ok());
        // A writer not above an earlier writer is an inversion, even with readers between.
        auto report =
            check_holds({hold(0, "rw", 5, 0, 100, 900), reader(1, "rw", 5, 200, 300, 1200),
                         hold(2, "rw", 5, 400, 500, 1300)});
        REQUIRE(report.inversions.size() == 1);
        CHECK(report.inversions[0].earlier.worker == 0);
        CHECK(report.inversions[0].later.worker == 2);
        // A reader below an earlier writer's token is one too.
        report = check_holds({hold(0, "rw", 5, 0, 100, 900), reader(1, "rw", 4, 200, 300, 1200)});
        REQUIRE(report.inversions.size() == 1);
        CHECK(report.inversions[0].later.kind == hold_kind::reader);
        CHECK(report.overlaps.empty());
    }

    TEST_CASE("K permits held at once pass, K + 1 is an excess, with every holder named") {
        auto report =
            check_holds({permit(0, "sem", 2, 0, 0, 500, 900), permit(1, "sem", 2, 1, 100, 600, 900),
                         permit(2, "sem", 2, 0, 500, 800, 1400)});
        CHECK(report.ok());
        CHECK(report.most_at_once.at("sem") == 2);
        CHECK(report.holds_per_kind.at("permit") == 3);
        // A third holder while two hold is one too many (and shares a permit with one).
        report =
            check_holds({permit(0, "sem", 2, 0, 0, 500, 900), permit(1, "sem", 2, 1, 100, 600, 900),
                         permit(2, "sem", 2, 0, 400, 450, 1400)});
        CHECK(report.overlaps.size() == 1);
        REQUIRE(report.excesses.size() == 1);
        CHECK(report.excesses[0].resource == "sem");
        CHECK(report.excesses[0].permits == 2);
        CHECK(report.excesses[0].at_ns == 400 * ns_per_ms);
        CHECK(report.excesses[0].holders.size() == 3);
        CHECK(report.most_at_once.at("sem") == 3);
    }

    TEST_CASE("an excess is counted once per rise above K, at its instant") {
        // Three at once over [200, 300), and again over [700, 800).
        const auto report = check_holds(
            {permit(0, "sem", 2, 0, 0, 1000, 1100), permit(1, "sem", 2, 1, 100, 900, 1100),
             permit(2, "sem", 3, 2, 200, 300, 1100), permit(3, "sem", 3, 2, 700, 800, 1500)});
        // K is the smallest named (2), though two records say 3: no permit is shared,
        // and the count alone is too high.
        CHECK(report.overlaps.empty());
        REQUIRE(report.excesses.size() == 2);
        CHECK(report.excesses[0].at_ns == 200 * ns_per_ms);
        CHECK(report.excesses[1].at_ns == 700 * ns_per_ms);
        CHECK(report.excesses[1].permits == 2);
    }

    TEST_CASE("a permit's holder that ends as the next begins is not an excess") {
        // Intervals are half-open: [0, 100) and [100, 200) never hold together.
        const auto report = check_holds(
            {permit(0, "sem", 1, 0, 0, 100, 900), permit(1, "sem", 1, 0, 100, 200, 900)});
        CHECK(report.ok());
        CHECK(report.most_at_once.at("sem") == 1);
    }

    TEST_CASE("two holders of one permit overlap, even within K") {
        const auto report = check_holds(
            {permit(0, "sem", 3, 1, 0, 500, 900), permit(1, "sem", 3, 1, 200, 300, 1000)});
        CHECK(report.excesses.empty());
        REQUIRE(report.overlaps.size() == 1);
        CHECK(report.overlaps[0].overlap_ns == 100 * ns_per_ms);
        CHECK(report.inversions.empty());  // permits carry no token
    }

    TEST_CASE("holders of permits not known are counted, not taken to share one") {
        // Where permits may go unnamed (a CLI that does not set REDLOCK_PERMIT).
        constexpr auto optional = redlock_torture::permit_names::optional;
        auto report = check_holds(
            {permit(0, "sem", 2, -1, 0, 500, 900), permit(1, "sem", 2, -1, 100, 600, 900)},
            optional);
        CHECK(report.ok());
        report = check_holds(
            {permit(0, "sem", 2, -1, 0, 500, 900), permit(1, "sem", 2, -1, 100, 600, 900),
             permit(2, "sem", 2, -1, 200, 300, 900)},
            optional);
        CHECK(report.overlaps.empty());
        CHECK(report.excesses.size() == 1);
        CHECK(report.impossibles.empty());
        // A torture worker always names it (the library tells every permit's holder which).
        report = check_holds({permit(0, "sem", 2, -1, 0, 500, 900)});
        REQUIRE(report.impossibles.size() == 1);
        CHECK(report.impossibles[0].what == "permit -1: below 0");
    }

    TEST_CASE("a permit never valid is not counted toward K") {
        auto stale = permit(2, "sem", 1, 0, 100, 150, 90);
        stale.valid_at_start = false;
        const auto report = check_holds({permit(0, "sem", 1, 0, 0, 500, 900), stale});
        CHECK(report.ok());
        CHECK(report.never_valid == 1);
    }

    TEST_CASE("records of every kind survive formatting and parsing") {
        for (const auto& r : {reader(1, "rw", 4, 10, 20, 30), permit(2, "sem", 2, 1, 10, 20, 30),
                              hold(3, "x", 9, 10, 20, 30)}) {
            const auto back = redlock_torture::parse_hold(r.format());
            REQUIRE(back);
            CHECK(back->kind == r.kind);
            CHECK(back->permits == r.permits);
            CHECK(back->permit == r.permit);
            CHECK(back->format() == r.format());
        }
        const std::string line = permit(2, "sem", 2, 1, 10, 20, 30).format();
        auto with = [&line](const std::string& from, const std::string& to) {
            return redlock_torture::parse_hold(line.substr(0, line.find(from)) + to +
                                               line.substr(line.find(from) + from.size()));
        };
        CHECK_FALSE(with("kind=permit", "kind=other"));
        CHECK_FALSE(with(" permits=2", ""));                       // a permit without its K
        CHECK_FALSE(with("permit=1", "permit=x"));                 // not a number
        CHECK_FALSE(with("kind=permit", "kind=writer"));           // a writer naming a permit
        CHECK_FALSE(with(" kind=permit permits=2 permit=1", ""));  // no kind at all
        // A permit past K is read as it is: what it says is for the checker to judge.
        const auto past = with("permit=1", "permit=2");
        REQUIRE(past);
        CHECK(past->permit == 2);
    }
}

TEST_SUITE("torture checker: writers without a token") {
    TEST_CASE("an unfenced writer overlapping another holder is found") {
        // Beside a fenced writer, the unfenced one second or first.
        auto report = check_holds({hold(0, "a", 5, 0, 100, 900), unfenced(1, "a", 50, 300, 1000)});
        REQUIRE(report.overlaps.size() == 1);
        CHECK(report.overlaps[0].earlier.worker == 0);
        CHECK(report.overlaps[0].later.worker == 1);
        CHECK_FALSE(report.overlaps[0].later.fenced);
        CHECK(report.overlaps[0].overlap_ns == 50 * ns_per_ms);
        CHECK(report.inversions.empty());  // a writer without a token orders nothing
        report = check_holds({unfenced(0, "a", 0, 100, 900), hold(1, "a", 5, 50, 300, 1000)});
        CHECK(report.overlaps.size() == 1);
        CHECK(report.inversions.empty());
        // Two unfenced writers: the threads of one worker, sharing its client.
        auto other_thread = unfenced(0, "a", 80, 300, 1000);
        other_thread.thread = 1;
        report = check_holds({unfenced(0, "a", 0, 100, 900), other_thread});
        REQUIRE(report.overlaps.size() == 1);
        CHECK(report.overlaps[0].earlier.thread == 0);
        CHECK(report.overlaps[0].later.thread == 1);
        CHECK(report.overlaps[0].overlap_ns == 20 * ns_per_ms);
        // An unfenced writer beside a reader.
        report = check_holds({reader(0, "rw", 3, 0, 100, 900), unfenced(1, "rw", 60, 200, 900)});
        CHECK(report.overlaps.size() == 1);
        // Counted only up to its validity, like any holder.
        CHECK(check_holds({unfenced(0, "a", 0, 500, 200), hold(1, "a", 1, 300, 400, 1300)}).ok());
    }

    TEST_CASE("unfenced writers interleaved with fenced ones pass when they do not overlap") {
        const auto report =
            check_holds({hold(0, "a", 5, 0, 100, 900), unfenced(1, "a", 100, 200, 1000),
                         unfenced(2, "a", 200, 300, 1100), hold(3, "a", 6, 300, 400, 1200),
                         unfenced(0, "a", 450, 500, 1300), reader(1, "rw", 2, 0, 100, 900),
                         unfenced(2, "rw", 150, 250, 1000), reader(3, "rw", 2, 300, 400, 1200)});
        CHECK(report.ok());
        CHECK(report.holds_per_kind.at("writer") == 6);
        CHECK(report.unfenced_writers == 4);
        CHECK(report.most_at_once.at("a") == 1);
    }

    TEST_CASE("fenced writers still order their tokens across unfenced ones between them") {
        // The unfenced writer between neither hides the earlier token nor lowers the bar.
        auto report = check_holds({hold(0, "a", 5, 0, 100, 900), unfenced(1, "a", 150, 250, 1000),
                                   hold(2, "a", 4, 300, 400, 1200)});
        REQUIRE(report.inversions.size() == 1);
        CHECK(report.inversions[0].earlier.fence == 5);
        CHECK(report.inversions[0].later.fence == 4);
        CHECK(report.overlaps.empty());
        // A reader after an unfenced writer keeps up with the last fenced one.
        report = check_holds({hold(0, "rw", 5, 0, 100, 900), unfenced(1, "rw", 150, 250, 1000),
                              reader(2, "rw", 4, 300, 400, 1200)});
        REQUIRE(report.inversions.size() == 1);
        CHECK(report.inversions[0].later.kind == hold_kind::reader);
    }

    TEST_CASE("records name their thread and whether they are fenced") {
        auto r = unfenced(4, "torture:a", 10, 20, 30);
        r.thread = 1;
        const auto back = redlock_torture::parse_hold(r.format());
        REQUIRE(back);
        CHECK(back->thread == 1);
        CHECK_FALSE(back->fenced);
        CHECK(back->format() == r.format());
        auto with = [](std::string line, const std::string& from, const std::string& to) {
            line.replace(line.find(from), from.size(), to);
            return redlock_torture::parse_hold(line);
        };
        CHECK_FALSE(with(r.format(), " fence=0", " fence=3"));  // a token it does not have
        CHECK_FALSE(with(r.format(), " fenced=0", ""));         // fenced or not, unsaid
        CHECK_FALSE(with(r.format(), " thread=1", ""));
        // A permit with a token is read, and is impossible (a semaphore has no token).
        const auto tokened =
            with(permit(2, "sem", 2, 1, 10, 20, 30).format(), "fenced=0", "fenced=1");
        REQUIRE(tokened);
        CHECK(redlock_torture::impossible_values(*tokened) == "a permit with a fencing token (0)");
        CHECK(redlock_torture::parse_hold(hold(3, "x", 9, 10, 20, 30).format()));
    }
}

TEST_SUITE("torture checker: impossible values are safety findings") {
    TEST_CASE("a hold with permit=3 of permits=2 is read and reported as a safety finding") {
        // Issue 36: a waiting attempt that lost counted late yeses for different permits
        // together and was granted "permit 3" of a semaphore of 2, beside two real holders.
        // It was once reported as "unreadable record lines 2", its overlaps unchecked.
        const auto bad = permit(2, "sem", 2, 3, 200, 300, 900);
        const auto file = std::filesystem::temp_directory_path() /
                          ("torture-checker-" + std::to_string(::getpid()) + ".records");
        std::ofstream{file} << permit(0, "sem", 2, 0, 0, 500, 900).format() << "\n"
                            << permit(1, "sem", 2, 1, 100, 600, 900).format() << "\n"
                            << bad.format() << "\nhold worker=9 resource=sem\n";
        const auto read = redlock_torture::read_worker_file(file);
        std::filesystem::remove(file);
        REQUIRE(read.holds.size() == 3);
        // Only the line that truly cannot be read is unreadable, and it is kept whole.
        REQUIRE(read.unreadable.size() == 1);
        CHECK(read.unreadable[0] == "hold worker=9 resource=sem");

        const auto report = check_holds(read.holds);
        CHECK_FALSE(report.ok());
        REQUIRE(report.impossibles.size() == 1);
        CHECK(report.impossibles[0].what == "permit 3 of 2: past K");
        CHECK(report.impossibles[0].hold.worker == 2);
        // Its holder believed it held a permit: counted toward K, so the third holder at
        // 200 ms is an excess too.
        REQUIRE(report.excesses.size() == 1);
        CHECK(report.excesses[0].holders.size() == 3);
        // Named as what it is, with the record whole.
        const auto text = redlock_torture::describe_problems(report, 0, 10);
        CHECK(text.find("IMPOSSIBLE HOLD (a safety finding): permit 3 of 2: past K") !=
              std::string::npos);
        CHECK(text.find("record: " + bad.format()) != std::string::npos);
        // Alone, with no one to overlap, it is still a finding.
        CHECK_FALSE(check_holds({bad}).ok());
    }

    TEST_CASE("a permit below 0, a semaphore of no permits, a fenced writer's 0") {
        auto impossible = [](const hold_record& h) {
            return redlock_torture::impossible_values(h);
        };
        CHECK(impossible(permit(0, "sem", 2, -2, 0, 10, 900)) == "permit -2: below 0");
        CHECK(impossible(permit(0, "sem", 0, 0, 0, 10, 900)) == "a semaphore of 0 permits");
        CHECK(impossible(hold(0, "a", 0, 0, 10, 900)) ==
              "a fenced writer with token 0 (a writer's token is at least 1)");
        // A reader's 0 is the counter before any writer; an unfenced writer names no token.
        CHECK(impossible(reader(0, "rw", 0, 0, 10, 900)).empty());
        CHECK(impossible(unfenced(0, "a", 0, 10, 900)).empty());
        CHECK(impossible(permit(0, "sem", 2, 1, 0, 10, 900)).empty());
        // Never valid or not, it is reported: the library said it.
        auto stale = hold(0, "a", 0, 100, 150, 90);
        stale.valid_at_start = false;
        const auto report = check_holds({stale});
        CHECK(report.never_valid == 1);
        CHECK(report.impossibles.size() == 1);
        // A fenced writer's 0 survives formatting and parsing, to be judged.
        const auto back = redlock_torture::parse_hold(hold(0, "a", 0, 0, 10, 900).format());
        REQUIRE(back);
        CHECK(back->fenced);
        CHECK(back->fence == 0);
    }
}

TEST_SUITE("torture checker: reentrant and session locks") {
    TEST_CASE("their records survive formatting and parsing, and say how they were taken") {
        for (const auto& r : {reentrant(1, "torture:f", 7, 10, 20, 30),
                              in_session(2, "torture:g", "3fa9c0d2e1b4:s12", 10, 20, 30)}) {
            const auto back = redlock_torture::parse_hold(r.format());
            REQUIRE(back);
            CHECK(back->kind == hold_kind::writer);
            CHECK(back->via == r.via);
            CHECK(back->session == r.session);
            CHECK(back->fenced == r.fenced);
            CHECK(back->format() == r.format());
        }
        // A plain hold's line names no via, as before: an older line is a plain hold.
        const auto plain = hold(3, "x", 9, 10, 20, 30);
        CHECK(plain.format().find("via=") == std::string::npos);
        CHECK(redlock_torture::parse_hold(plain.format())->via == hold_via::plain);
        CHECK(reentrant(1, "f", 7, 10, 20, 30).describe(0).find("(reentrant)") !=
              std::string::npos);
        CHECK(in_session(2, "g", "ab:s1", 10, 20, 30).describe(0).find("(in session ab:s1)") !=
              std::string::npos);
        auto with = [](std::string line, const std::string& from, const std::string& to) {
            line.replace(line.find(from), from.size(), to);
            return redlock_torture::parse_hold(line);
        };
        const std::string session_line = in_session(2, "g", "ab:s1", 10, 20, 30).format();
        CHECK_FALSE(with(session_line, "via=session", "via=other"));      // a via it does not know
        CHECK_FALSE(with(session_line, " session=ab:s1", ""));            // a session's, unnamed
        CHECK_FALSE(with(session_line, "session=ab:s1", "session="));     // named empty
        CHECK_FALSE(with(session_line, "via=session", "via=reentrant"));  // a session, not in one
        CHECK_FALSE(with(reentrant(1, "f", 7, 10, 20, 30).format(), "via=reentrant",
                         "via=reentrant session=ab:s1"));
    }

    TEST_CASE("a line of a kind it does not know is unreadable, and kept whole") {
        const auto file = std::filesystem::temp_directory_path() /
                          ("torture-checker-via-" + std::to_string(::getpid()) + ".records");
        std::string unknown_kind = reentrant(1, "f", 7, 10, 20, 30).format();
        unknown_kind.replace(unknown_kind.find("kind=writer"), 11, "kind=reentrant");
        std::string unknown_via = in_session(2, "g", "ab:s1", 10, 20, 30).format();
        unknown_via.replace(unknown_via.find("via=session"), 11, "via=sessions");
        std::ofstream{file} << reentrant(0, "f", 7, 0, 100, 900).format() << "\n"
                            << unknown_kind << "\n"
                            << in_session(1, "g", "ab:s1", 0, 100, 900).format() << "\n"
                            << unknown_via << "\n";
        const auto read = redlock_torture::read_worker_file(file);
        std::filesystem::remove(file);
        CHECK(read.holds.size() == 2);
        REQUIRE(read.unreadable.size() == 2);
        CHECK(read.unreadable[0] == unknown_kind);
        CHECK(read.unreadable[1] == unknown_via);
    }

    TEST_CASE("two reentrant holds believed valid at once are an overlap") {
        // Worker 1's lock was granted at 50 while worker 0 held its own, re-entered or not,
        // until 100.
        auto report =
            check_holds({reentrant(0, "f", 1, 0, 100, 900), reentrant(1, "f", 2, 50, 300, 1000)});
        REQUIRE(report.overlaps.size() == 1);
        CHECK(report.overlaps[0].earlier.via == hold_via::reentrant);
        CHECK(report.overlaps[0].later.via == hold_via::reentrant);
        CHECK(report.overlaps[0].overlap_ns == 50 * ns_per_ms);
        CHECK(report.inversions.empty());
        // Two threads of one worker, each its own owner, are two holders too.
        auto other_thread = reentrant(0, "f", 2, 80, 300, 1000);
        other_thread.thread = 1;
        CHECK(check_holds({reentrant(0, "f", 1, 0, 100, 900), other_thread}).overlaps.size() == 1);
        // Against a plain writer of the resource, either way round.
        CHECK(check_holds({hold(0, "f", 1, 0, 100, 900), reentrant(1, "f", 2, 50, 300, 1000)})
                  .overlaps.size() == 1);
        // One after the other passes; counted as writers, and as reentrant.
        report =
            check_holds({reentrant(0, "f", 1, 0, 100, 900), reentrant(1, "f", 2, 100, 300, 1000)});
        CHECK(report.ok());
        CHECK(report.holds_per_kind.at("writer") == 2);
        CHECK(redlock_torture::holds_via(report, hold_via::reentrant) == 2);
        CHECK(redlock_torture::holds_via(report, hold_via::session) == 0);
        // Their tokens order like any writer's: one re-entered lock's token again is an
        // inversion.
        report =
            check_holds({reentrant(0, "f", 4, 0, 100, 900), reentrant(1, "f", 4, 200, 300, 1000)});
        CHECK(report.inversions.size() == 1);
    }

    TEST_CASE("two session locks believed valid at once are an overlap, sessions or not") {
        // Locks of two sessions, then of one session (two threads of a client).
        auto report = check_holds(
            {in_session(0, "g", "a:s1", 0, 400, 600), in_session(1, "g", "b:s1", 300, 500, 900)});
        REQUIRE(report.overlaps.size() == 1);
        CHECK(report.overlaps[0].overlap_ns == 100 * ns_per_ms);
        CHECK(report.overlaps[0].later.session == "b:s1");
        auto same = in_session(0, "g", "a:s1", 300, 500, 900);
        same.thread = 1;
        CHECK(check_holds({in_session(0, "g", "a:s1", 0, 400, 600), same}).overlaps.size() == 1);
        // A lock lost with its session counts up to its validity's end, not its section's.
        auto lost = in_session(0, "g", "a:s1", 0, 800, 250);
        lost.lost = true;
        lost.valid_at_end = false;
        CHECK(check_holds({lost, in_session(1, "g", "b:s1", 300, 500, 900)}).ok());
        CHECK(check_holds({lost, in_session(1, "g", "b:s1", 200, 500, 900)}).overlaps.size() == 1);
        // Beside a reentrant lock of the same resource, too.
        report = check_holds(
            {in_session(0, "g", "a:s1", 0, 400, 600), reentrant(1, "g", 3, 100, 200, 900)});
        CHECK(report.overlaps.size() == 1);
        CHECK(redlock_torture::holds_via(report, hold_via::session) == 1);
        CHECK(redlock_torture::holds_via(report, hold_via::reentrant) == 1);
    }
}
