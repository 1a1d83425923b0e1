#pragma once

// A term that repeats in the torture test's election, or a lock's fencing token that does not
// rise, is not always a bug: the README ("Where
// tokens come from") says that in-memory nodes restarting empty, together with nodes that missed
// an earlier confirm round, can erase every copy of the last token. This reads the test's faults
// log (torture_test.cpp) back as a timeline and tells, for each term_inversion of the election
// checker, whether the faults could have done that. It is a necessary condition only: a repeat
// it does not explain is a bug for sure; one it explains may still be one, but the run cannot
// tell.
//
// The log: one line per event, `<monotonic ns> <event> key=value ... [bare words]`. Node faults
// (kill/restart, freeze/thaw, blackhole/unblackhole, latency/latency-end, drop and reset as
// instants) name `node=N`; a kill of an in-memory node says so with the bare word `in-memory`.
// Faults aimed at one candidate (candidate-partition/-heal, candidate-storm/-storm-end) name the
// candidate's id and its slot; the slot's proxies carry them, and they outlive a candidate that
// is killed: its replacement inherits them, and the closing line names the replacement.

#include "checker.hpp"
#include "election_checker.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <istream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace redlock_torture {

/// One fault over [from_ns, to_ns]: `to_ns` is its closing event, the end of time when none
/// came, and `from_ns` for an instant (a drop, a reset).
struct fault_span {
    std::string kind;  ///< the event that opened it: "blackhole", "candidate-storm", ...
    std::int64_t from_ns = 0;
    std::int64_t to_ns = 0;
    std::vector<std::size_t> nodes;  ///< the nodes it cut off; empty: every node (a storm)
    /// Set: only the candidate in this slot was cut off (through its own proxies).
    std::optional<std::size_t> slot;
};

struct fault_timeline {
    std::vector<fault_span> faults;      ///< in the log's order
    std::map<int, std::size_t> slot_of;  ///< candidate id -> its slot
    std::vector<std::pair<std::int64_t, std::size_t>> in_memory_kills;  ///< (when, node)
    std::size_t unreadable = 0;  ///< lines without a time, or a known event without its node
};

[[nodiscard]] auto parse_fault_log(std::istream& in) -> fault_timeline;
/// An empty timeline (every repeat unexplained) when the file cannot be read.
[[nodiscard]] auto read_fault_log(const std::filesystem::path& file) -> fault_timeline;

/// Whether the faults could have erased `earlier`'s term before `later` was elected.
struct repeat_explanation {
    /// (missed ∪ emptied) holds a majority of the nodes.
    bool within_limit = false;
    /// Nodes that may have missed `earlier`'s confirm round: a fault on the node, or on the
    /// link of `earlier`'s slot to it, met [earlier.called_ns, earlier.start_ns]. The first
    /// such fault of each.
    std::map<std::size_t, fault_span> missed;
    /// In-memory nodes killed in [earlier.called_ns, later.start_ns]: they restarted empty.
    std::set<std::size_t> emptied;
};

/// One token's life as explain_erasure() reads it: a leadership's term, or a fenced hold's token.
struct token_span {
    std::int64_t called_ns = 0;     ///< campaign() or acquire() was called: round 1 after this
    std::int64_t confirmed_ns = 0;  ///< it had returned: round 2 was over
    std::int64_t next_start_ns = 0;  ///< the later holder's start, with a token not above it
    /// Set for a candidate: the faults aimed at its slot cut it off too. A worker's hold goes
    /// through the node proxies every client shares, so only the nodes' faults count.
    std::optional<int> candidate;
};

/// Whether the faults could have erased `span`'s token before the next holder read the
/// counters: the reasoning below, for a term and for a lock's fencing token alike (both come
/// from the same two rounds, README "Where tokens come from").
[[nodiscard]] auto explain_erasure(const fault_timeline& faults, const token_span& span,
                                   std::size_t node_count) -> repeat_explanation;

/// Why the condition is necessary: `later`'s term is one more than the highest counter its
/// granting majority (at least node_count / 2 + 1 nodes) returned, so none of those nodes held
/// `earlier`'s term. A node that took `earlier`'s confirm keeps it (counters only rise) unless
/// it restarts empty, and only in-memory nodes do; so each of them missed the confirm or was
/// emptied after it.
[[nodiscard]] auto explain_repeat(const fault_timeline& faults, const term_inversion& repeat,
                                  std::size_t node_count) -> repeat_explanation;

struct explained_repeat {
    term_inversion repeat;
    repeat_explanation why;
};

/// Moves the inversions that explain_repeat() finds within the limit out of
/// `report.inversions` and returns them; the unexplained ones stay (TERM NOT INCREASING).
[[nodiscard]] auto take_explained_repeats(election_report& report, const fault_timeline& faults,
                                          std::size_t node_count) -> std::vector<explained_repeat>;

/// A heading line with their count, then the first `limit`: both leaderships and both node
/// sets; times in ms since `origin_ns`.
[[nodiscard]] auto describe_explained_repeats(const std::vector<explained_repeat>& repeats,
                                              std::int64_t origin_ns, std::size_t limit)
    -> std::string;

/// A fenced hold's token not above an earlier writer's (checker.hpp's inversion) is the same
/// erasure as a repeated term: the later hold's token comes from counters its majority read.
struct explained_inversion {
    inversion pair;
    repeat_explanation why;
};

/// As take_explained_repeats(), for the locks' inversions: the explained ones leave
/// `report.inversions`, the others stay (TOKEN INVERSION).
[[nodiscard]] auto take_explained_inversions(check_report& report, const fault_timeline& faults,
                                             std::size_t node_count)
    -> std::vector<explained_inversion>;

/// As describe_explained_repeats(), for the locks' tokens.
[[nodiscard]] auto describe_explained_inversions(const std::vector<explained_inversion>& found,
                                                 std::int64_t origin_ns, std::size_t limit)
    -> std::string;

}  // namespace redlock_torture
