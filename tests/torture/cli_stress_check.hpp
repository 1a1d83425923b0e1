#pragma once

// The records of the CLI stress test's critical sections (cli_stress_section.cpp), and
// the checks on them: among the sections of invocations that exited 0, a writer's overlaps
// no other reader's or writer's, no more permit holders' overlap than the semaphore has
// permits, and writers' fencing tokens strictly increase in the order the sections began
// (a reader's keeps up with them): the torture checker's rules (checker.hpp), applied to
// the sections. A leader's section (`redlock elect`) is checked as a writer's of a resource
// of its own, with its term as the fence: no two leaders at once, terms strictly increasing
// in the order the leaderships began. And what the invocations left on the nodes.

#include "record.hpp"
#include "support/redis_server.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace redlock_torture {

/// One section, as its "begin" and "end" lines told it; -1 for a line that is missing.
struct section_record {
    int invocation = -1;
    hold_kind kind = hold_kind::writer;  ///< what the invocation asked `redlock run` for
    /// A writer's or reader's REDLOCK_FENCE; a permit's REDLOCK_PERMIT, or "-" without one;
    /// a leader's REDLOCK_TERM.
    std::string fence;
    std::int64_t begin_ns = -1;
    std::int64_t end_ns = -1;
    /// A leader's section ("leader" in the record): `redlock elect` ran it; kind is writer.
    bool leader = false;
};

/// "writer", "reader", "permit" or "leader": the kind a section record names.
[[nodiscard]] auto section_kind(const section_record& s) noexcept -> const char*;

/// Adds the records of `file` to `into`, by invocation. Returns the number of lines it
/// could not read (or that repeat a begin or an end: one invocation runs one section, or
/// that disagree with its other line); each such line goes whole to `unreadable`, if given,
/// after the file's name and a colon. The token is read as it is, whatever it says: a
/// permit past K is a finding of check_sections, not an unreadable line.
auto read_sections(const std::filesystem::path& file, std::map<int, section_record>& into,
                   std::vector<std::string>* unreadable = nullptr) -> std::size_t;

/// The sections of the invocations that exited 0 (`held`), in invocation order, and where the
/// records and the exit codes disagree (`mismatches`, one sentence each): an invocation that
/// exited 0 without a complete record, or one that exited otherwise (69, 75: never held) with
/// a record. `codes`: the exit code of each invocation whose outcome was expected (the
/// others are the caller's to report); times relative to `origin_ns`.
struct matched_sections {
    std::vector<section_record> held;
    std::vector<std::string> mismatches;
};

[[nodiscard]] auto match_sections(const std::map<int, section_record>& sections,
                                  const std::map<int, int>& codes, std::int64_t origin_ns)
    -> matched_sections;

/// Every problem is a safety finding: two holders at once that must exclude each other,
/// tokens out of order, or a section whose lock named a value no correct lock has.
struct section_problem {
    /// "overlap", "fence not increasing", "more than K permits"; and impossible values:
    /// "no fence" (a writer's or reader's token not a number), "fence 0" (a writer's token
    /// is at least 1), "no such permit" (a permit named past K - 1, below 0 or not a number).
    /// Leaders': "leaders overlap", "term not increasing", "no term", "term 0".
    std::string what;
    std::vector<section_record> sections;  ///< the earlier first; every holder for an excess
};

/// Over complete records (begin and end), each believed valid from its begin to its end
/// (a section is far shorter than the TTL): writers and readers (on one resource) as
/// check_holds() checks them, and permits (of another resource) against `permits`, the
/// semaphore's K, and against each other when they name their permit (two holders of one
/// permit overlap; "-": not named, counted only). A writer's or reader's fence must be a
/// number, a writer's at least 1; a permit named must be one of the K. A permit named past
/// K (issue 36: a permit no majority granted) is reported and still counted toward K.
/// Leaders are writers of a resource of their own, their terms fences: checked against each
/// other only, never against the lock's writers and readers.
[[nodiscard]] auto check_sections(const std::vector<section_record>& sections, int permits)
    -> std::vector<section_problem>;

/// "invocation 12 reader fence 40 [1234.567, 1250.001] ms" ("permit 3" for a permit, "leader
/// term 9" for a leader), times relative to `origin_ns`.
[[nodiscard]] auto describe(const section_record& s, std::int64_t origin_ns) -> std::string;

/// Lock keys ("redlock:*": the holds of every kind, and a semaphore's count) and waiter
/// queues ("redlock-queue:*"), which all carry a TTL, on every node, described with the
/// node's index and their shape (key_shapes.hpp); fence counters never expire and are left
/// out. An election's leader key (`redlock:{N}|leader`) has no TTL and may stay: a
/// resignation deletes it, one a leader could not delete everywhere (its resignation cut off
/// from a node) stays until the next leader overwrites it, counting for nobody once the
/// election's lock is gone (README, "Leader election"; key_shapes.hpp). It is listed apart,
/// in `leaders`, and is no leak; every other key of the election (its lock, its queue) is.
/// The nodes must be running and not frozen.
struct leftovers {
    std::vector<std::string> locks;
    std::vector<std::string> queues;
    std::vector<std::string> leaders;  ///< leader keys: allowed to stay
};

[[nodiscard]] auto find_leftovers(const std::vector<redlock_test::redis_server>& nodes)
    -> leftovers;

}  // namespace redlock_torture
