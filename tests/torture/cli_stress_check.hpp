#pragma once

// The records of the CLI stress test's critical sections (cli_stress_section.cpp), and
// the checks on them: the sections of invocations that exited 0 must not overlap, and
// their fencing tokens must strictly increase in the order the sections began; and what
// the invocations left on the nodes.

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
    std::string fence;  ///< REDLOCK_FENCE as the section saw it
    std::int64_t begin_ns = -1;
    std::int64_t end_ns = -1;
};

/// Adds the records of `file` to `into`, by invocation. Returns the number of lines it
/// could not read (or that repeat a begin or an end: one invocation runs one section).
auto read_sections(const std::filesystem::path& file, std::map<int, section_record>& into)
    -> std::size_t;

struct section_problem {
    std::string what;  ///< "overlap", "fence not increasing"
    section_record earlier;
    section_record later;
};

/// Over complete records (begin and end), ordered by begin: each must begin no earlier
/// than every earlier one ended, and its fence must be a number above the previous one.
[[nodiscard]] auto check_sections(std::vector<section_record> sections)
    -> std::vector<section_problem>;

/// "invocation 12 fence 40 [1234.567, 1250.001] ms", times relative to `origin_ns`.
[[nodiscard]] auto describe(const section_record& s, std::int64_t origin_ns) -> std::string;

/// Lock keys ("redlock:*") and waiter queues ("redlock-queue:*"), which all carry a TTL,
/// on every node, described with the node's index; fence counters never expire and are
/// left out. The nodes must be running and not frozen.
struct leftovers {
    std::vector<std::string> locks;
    std::vector<std::string> queues;
};

[[nodiscard]] auto find_leftovers(const std::vector<redlock_test::redis_server>& nodes)
    -> leftovers;

}  // namespace redlock_torture
