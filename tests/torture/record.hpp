#pragma once

// What a torture worker writes about each lock it held, and what the orchestrator
// reads back. One line per record, `key=value` fields separated by spaces, so that a
// person can read the files of a failed run too.
//
// Times are nanoseconds on CLOCK_MONOTONIC (std::chrono::steady_clock on Linux), which
// every process of one machine shares: records of different workers compare directly.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock_torture {

/// Nanoseconds in a millisecond: records are in ns, tests write them in ms.
inline constexpr std::int64_t ns_per_ms = 1'000'000;

/// steady_clock::now() in nanoseconds since its epoch (CLOCK_MONOTONIC).
[[nodiscard]] auto monotonic_ns() noexcept -> std::int64_t;

/// What a hold was, of the kinds of redlock::lock_kind. The checker's rules differ by kind:
/// a writer excludes everyone, readers share with readers, a semaphore admits K.
enum class hold_kind {
    writer,  ///< exclusive: a plain lock, or the writer of a read-write lock
    reader,  ///< shared: a reader of a read-write lock
    permit,  ///< one of the K permits of a counting semaphore
};

[[nodiscard]] auto kind_name(hold_kind kind) noexcept -> const char*;
[[nodiscard]] auto kind_from_name(std::string_view name) noexcept -> std::optional<hold_kind>;

/// How a hold was taken, beside its kind: the checker's rules follow the kind alone (a
/// reentrant or a session lock is a writer: exclusive), this says which path of the library
/// gave it, for the figures and the failure messages.
enum class hold_via {
    plain,      ///< a lone acquire and release (no `via` field in the record)
    reentrant,  ///< lock_options::owner: re-entered by its owner, one record from the first
                ///< acquire to the release of the last hold
    session,    ///< lock_options::session: renewed by the session, released by a release
                ///< or by closing the session
};

[[nodiscard]] auto via_name(hold_via via) noexcept -> const char*;
[[nodiscard]] auto via_from_name(std::string_view name) noexcept -> std::optional<hold_via>;

/// One critical section: a lock acquired (with a fencing token or without: a permit never has
/// one, and some writers go without so that a release can hand their lock over), held, then
/// released.
struct hold_record {
    int worker = 0;  ///< the worker process
    int thread = 0;  ///< the thread of that worker (they share its client)
    std::string resource;
    hold_kind kind = hold_kind::writer;
    hold_via via = hold_via::plain;
    std::string session;  ///< the session's id (session::id()), for a session's hold only
    int permits = 0;      ///< K, for a permit; 0 otherwise
    int permit = -1;      ///< the permit held (0 to K - 1), for a permit; -1 otherwise or unknown
    bool fenced = true;   ///< the lock came with a fencing token (a permit: false)
    std::uint64_t fence = 0;          ///< the token; 0 when not fenced
    std::int64_t called_ns = 0;       ///< acquire() was called
    std::int64_t start_ns = 0;        ///< acquire() had returned a lock (taken before valid())
    std::int64_t end_ns = 0;          ///< just before release() (taken before valid())
    std::int64_t until_start_ns = 0;  ///< valid_until() right after acquire
    std::int64_t until_end_ns = 0;    ///< valid_until() at the end (renewals move it)
    bool valid_at_start = false;      ///< valid() right after start_ns was taken
    bool valid_at_end = false;        ///< valid() right after end_ns was taken
    bool lost = false;                ///< lost() at the end
    std::int64_t lost_at_ns = 0;      ///< when on_lost ran; 0 if it did not
    bool auto_renew = false;
    int ttl_ms = 0;
    int extends = 0;  ///< manual extend() calls that succeeded
    /// Nodes the release deleted the key on; -1: release failed. A session's hold released by
    /// closing its session: 1 if a majority deleted it, 0 if not.
    int deleted = -1;
    int release_ok = 0;  ///< 1 when release returned a report

    /// Until when the holder could believe its lock valid: the end of its critical
    /// section, or the end of the validity, whichever came first. A lock found lost
    /// at the end counts up to valid_until() (the holder may have acted until then).
    [[nodiscard]] auto believed_end_ns() const noexcept -> std::int64_t {
        return end_ns < until_end_ns ? end_ns : until_end_ns;
    }

    [[nodiscard]] auto format() const -> std::string;
    /// One-line description for failure messages, times relative to `origin_ns`.
    [[nodiscard]] auto describe(std::int64_t origin_ns) const -> std::string;
};

/// A worker's totals, written once when it stops.
struct worker_summary {
    int worker = 0;
    std::map<std::string, std::uint64_t> counts;  ///< attempts, granted, contended, ...
    [[nodiscard]] auto format() const -> std::string;
};

/// "hold k=v ..." or "summary k=v ...": parsed; nullopt for anything else. A hold is read
/// whatever its values (a permit past K, a fenced writer with token 0): the checker tells
/// the impossible ones (impossible_values); nullopt means a field is missing, is not a
/// number, or contradicts the format (a permit's fields on a writer, a token unfenced, a
/// `via` it does not know, a session's id on a hold not in one or none on one that is).
[[nodiscard]] auto parse_hold(std::string_view line) -> std::optional<hold_record>;
[[nodiscard]] auto parse_summary(std::string_view line) -> std::optional<worker_summary>;

struct worker_file {
    std::vector<hold_record> holds;
    std::optional<worker_summary> summary;
    std::vector<std::string> unreadable;  ///< the lines that could not be read, whole
};

[[nodiscard]] auto read_worker_file(const std::filesystem::path& file) -> worker_file;

}  // namespace redlock_torture
