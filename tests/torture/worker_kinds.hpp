#pragma once

// What a torture worker (worker.cpp) does with a lock it holds, beside the loop itself: what it
// reads off the lock into its record, and the two ways of holding that take more than an
// acquire and a release:
//
// - a reentrant lock (--kinds re, lock_options::owner): its thread, the owner, re-enters it
//   once or twice during the critical section, at a random point of it (at times past the
//   lock's validity), and releases those holds before the last one.
//   Every re-entry must give back the same lock (its value, token and kind), with one more
//   hold, and every release but the last must leave the rest open without a word to the
//   nodes. The record is one writer's hold, from the first acquire to the last release. A
//   re-entry after the lock stopped being valid gets a new lock (README, "Reentrancy"): that
//   lock is a hold of its own, recorded as such.
// - a lock in a session (--kinds s, lock_options::session): the threads of one client share
//   its session (session_slot), opened again once it is lost or closed. A thread that finds
//   itself the session's only user at the end of its section sometimes closes the session
//   instead of releasing its lock: the close releases it.

#include "record.hpp"

#include <redlock/redlock.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

namespace redlock_torture {

/// A thread's counts, summed into the worker's summary.
using count_map = std::map<std::string, std::uint64_t>;

/// The counts of reentrant_section and session_slot, each in every summary (0 or not).
// clang-format off
inline constexpr const char* reentrant_and_session_counts[] = {
    "reentries", "reentry_mismatch", "reentry_failures", "reentry_new_locks", "reentries_skipped",
    "session_opens", "session_open_failures", "session_lost", "session_refused", "session_closes",
    "session_close_failures"};
// clang-format on

/// Sleeps `d`, or less if a stop is requested meanwhile.
void nap(std::chrono::nanoseconds d, const std::stop_token& stop);

/// The record's kind for what the lock says it is.
[[nodiscard]] auto kind_of(const redlock::lock& held) -> hold_kind;

/// Right after acquire returned `held`: start, valid_at_start, until_start, and what the lock
/// says it is (kind, token, permit).
void record_start(hold_record& r, const redlock::lock& held);
/// Just before the release: end, valid_at_end, until_end, lost.
void record_end(hold_record& r, const redlock::lock& held);
/// Releases `held` and records what the release did (release_ok, deleted); counts
/// released_on_majority and release_failures.
void release_into(hold_record& r, redlock::client& locks, const redlock::lock& held,
                  count_map& counts);

/// When a reentrant lock's section re-enters it, and how.
struct reentrant_plan {
    std::int64_t hold_ms = 0;        ///< the whole section
    std::int64_t reenter_at_ms = 0;  ///< into it: the re-entries (0 to hold_ms)
    std::int64_t release_at_ms = 0;  ///< their releases (reenter_at_ms to hold_ms)
    int extra = 1;                   ///< holds taken again
    /// Only while the lock is valid(); else the re-entry is tried anyway, and a lock whose
    /// validity has ended must give a new lock, not the old one again.
    bool look_first = true;
};

/// Draws a plan from `uniform(lo, hi)` for a section of `hold_ms` of a lock of `ttl_ms`: the
/// re-entries at any point of it, their releases at any point after; for one lock in three
/// that is not renewed, the re-entries come just past its TTL, once its validity has ended,
/// and the section ends soon after.
[[nodiscard]] auto draw_reentrant_plan(
    const std::function<std::int64_t(std::int64_t, std::int64_t)>& uniform, std::int64_t hold_ms,
    int ttl_ms, bool renewed) -> reentrant_plan;

/// A reentrant lock's critical section, `plan.hold_ms` long: at reenter_at_ms, `extra` more
/// holds of `outer` through its owner (`options` as for the first acquire); at release_at_ms,
/// their releases, the last taken first. Counts reentries, reentry_mismatch (a re-entry that
/// gave another token, kind or owner, or re-entered a lock already invalid, or a hold count
/// or a release that does not add up), reentry_failures (an error), reentry_new_locks (a
/// re-entry once the lock was no longer valid, given a new lock: recorded from `base` and
/// released at once, its record passed to `write`), reentries_skipped (with look_first, the
/// lock was no longer valid: not tried).
void reentrant_section(redlock::client& locks, const std::string& resource,
                       const redlock::lock_options& options, const redlock::lock& outer,
                       const hold_record& base, const reentrant_plan& plan,
                       const std::stop_token& stop, count_map& counts,
                       const std::function<void(const std::string&)>& write);

/// A session as the threads of one client share it.
struct open_session {
    redlock::session handle;
    /// When its on_lost ran (monotonic ns); 0 if it did not.
    std::shared_ptr<std::atomic<std::int64_t>> lost_at;
    int users = 0;  ///< threads between take() and give_back(): the slot's mutex guards it
};

/// The session of one client's threads (--kinds s): one open at a time.
class session_slot {
public:
    explicit session_slot(redlock::client& client) : client_{&client} {}

    /// The session, with one user more; opened first, with a TTL of `ttl_ms`, if there is none
    /// or it was lost or closed (counts session_opens, and session_lost for a lost one it
    /// replaces). Null if it could not be opened (counts session_open_failures).
    [[nodiscard]] auto take(int ttl_ms, count_map& counts) -> std::shared_ptr<open_session>;

    /// One user fewer.
    void give_back(const std::shared_ptr<open_session>& in);

    /// The end of a hold of `held`, in `in` (taken by this thread): releases it, and gives
    /// the session back. With `close`, if no other thread uses the session and it is still
    /// open, closes it instead (it leaves the slot), which releases the lock: counts
    /// session_closes (session_close_failures), and for the record release_ok, and deleted 1
    /// if a majority deleted the lock, 0 if not.
    void release(hold_record& r, redlock::client& locks, const redlock::lock& held,
                 const std::shared_ptr<open_session>& in, bool close, count_map& counts);

private:
    redlock::client* client_;
    std::mutex mutex_;
    std::shared_ptr<open_session> current_;
};

}  // namespace redlock_torture
