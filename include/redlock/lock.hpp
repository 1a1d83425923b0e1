#pragma once

#include "redlock/error.hpp"
#include "redlock/export.hpp"
#include "redlock/session.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

namespace detail {
struct lock_state;
}

class lock;
struct error;

/// What an auto-renewed lock's holder is told when a renewal went through but
/// the lock now stands on fewer nodes than before: since the renewal before, a
/// node's clock stepped (it may have expired the lock's key early, and its
/// word does not count for a quarantine, README "Clock steps"). Not a loss:
/// the lock is still held on a majority, but one more failure may cost it.
struct shrink_report {
    /// "lock on 'r': held on fewer nodes: 10.0.0.3:6379: its clock stepped 60000 ms forward
    /// ...".
    std::string message;
    /// The nodes that stopped counting, each with why (status error).
    std::vector<node_report> nodes;
};

/// How an acquisition that has to wait for another holder waits.
enum class wait_mode {
    /// The default. Waiters queue per resource on each node; a release wakes
    /// only the first live waiter (O(1) wake-ups, no herd). Everyone else
    /// sleeps until the holder's TTL could have run out, or their turn.
    targeted,
    /// As targeted, and grants follow arrival order: a newcomer does not
    /// overtake a live waiter queued ahead of it.
    fair,
    /// A release wakes every live waiter (for comparison; a thundering herd).
    broadcast,
    /// No queue and no notifications: retry after retry.delay + jitter.
    poll,
};

/// What kind of lock an acquisition asks for (README, "Lock kinds").
enum class lock_kind : std::uint8_t {
    /// One holder per resource: the writer of a read-write lock. The default.
    exclusive,
    /// A reader: any number hold together while no exclusive holder does. A
    /// queued writer stops new readers (writer-preferring).
    shared,
    /// One of `lock_options::permits` leases of a counting semaphore.
    permit,
};

/// The most permits a semaphore may have (each is a key on every node).
inline constexpr int max_permits = 1024;

/// The longest holder text (lock_options::holder), in bytes.
inline constexpr std::size_t max_holder_length = 200;

/// The holder text stored in a lock's value, or empty when it has none. A
/// value is a 32-hex-digit random token, then "|" and the holder text when
/// there is one (README, "Who holds a lock"); a value of another form (from
/// elsewhere, or a version before 0.2) has no holder text.
[[nodiscard]] REDLOCK_API auto holder_of(std::string_view value) noexcept -> std::string_view;

/// Per-acquisition choices. Every unset field takes the client's configured default.
struct lock_options {
    std::optional<std::chrono::milliseconds> ttl{};
    /// Total attempts, the first included. When only `max_wait` is set, attempts
    /// are unlimited until the wait deadline.
    std::optional<int> attempts{};
    /// Give up once this much time has passed since the call (monotonic clock).
    std::optional<std::chrono::milliseconds> max_wait{};
    /// Keep the lock alive in the background (a watchdog): it is extended each
    /// time `lock.renew_fraction` of its TTL has passed, until it is released or
    /// the client stops. If renewals cannot reach a majority before the validity
    /// ends, the lock is marked lost (see lock::lost) and `on_lost` runs.
    std::optional<bool> auto_renew{};
    /// Also obtain a fencing token (lock::fence()): a number that strictly
    /// increases across successive holders of the resource. Single resource only.
    std::optional<bool> fencing{};
    /// Runs once, on the loop thread, when an auto-renewed lock is lost. The
    /// error says why (errc::lock_lost, with each node's answer to the last
    /// renewal that failed). Afterwards the client releases, best effort, what
    /// the nodes still hold of the lock (unless on_lost released it).
    std::function<void(const lock&, const error&)> on_lost{};
    /// Runs on the loop thread when a renewal of an auto-renewed lock went
    /// through while the lock stands on fewer nodes than before (see
    /// shrink_report): the holder still holds it, with less to spare. A renewal
    /// that fails instead reports the same nodes in on_lost's error.
    std::function<void(const lock&, const shrink_report&)> on_shrunk{};
    /// How to wait when the lock is held elsewhere (see wait_mode). Waiting
    /// applies when more than one attempt is allowed; a lock over several
    /// resources always polls.
    std::optional<redlock::wait_mode> wait{};
    /// Read-write locks: true asks for a shared (reader) hold on a single
    /// resource; false or unset for an exclusive one (a writer). Readers and
    /// exclusive holders of one resource exclude each other on every node, so
    /// the two can never both hold a majority. With `fencing`, a reader gets
    /// the current token (the last writer's, or higher) rather than a new one.
    std::optional<bool> shared{};
    /// Counting semaphore: take one of this many permits (1 to 1024) on a
    /// single resource. Every user of the resource must name the same count
    /// (a node refuses a different one: invalid_argument). Each permit is an
    /// exclusive lock of its own on the quorum, so at most `permits` hold at
    /// once. Not with `shared` or `fencing`.
    std::optional<int> permits{};
    /// Reentrancy: an owner (any non-empty name of the caller's choosing, not
    /// a thread id) that acquires a lock this client already holds for it, of
    /// the same kind on the same resources, gets the same lock again at once
    /// and its hold count rises; each release lowers it, and the lock is
    /// released on the nodes when it returns to zero. Unset: no reentrancy (a
    /// second acquire contends with the first, as on another client).
    std::optional<std::string> owner{};
    /// Who holds the lock, for people: stored with it on every node (after the
    /// random token, in its value) and shown by status, list, and a rival's
    /// `contended` error. Printable text of at most max_holder_length bytes;
    /// empty for none. Unset: "<host name>:<pid> (<program name>)".
    std::optional<std::string> holder{};
    /// Lock-delay for this lock (client_config::lock_defaults::lock_delay):
    /// the nodes keep it this long past its TTL unless it is released.
    std::optional<std::chrono::milliseconds> lock_delay{};
    /// Places the lock in a session (client::open_session): it takes the
    /// session's TTL, and the session's renewals keep it alive (auto_renew is
    /// implied) until it is released, the session is closed or lost. An
    /// exclusive lock only, without lock-delay; not on cluster members.
    std::optional<redlock::session> session{};
};

/// A held (or once-held) distributed lock.
///
/// A cheap, copyable handle onto state shared with the client: copies observe
/// the same validity deadline. It is not an RAII object; see redlock::guard.
/// All members are safe to call from any thread.
class REDLOCK_API lock {
public:
    lock() = default;  ///< an empty handle: valid() is false

    /// The resource locked (the first one, for a lock over several).
    [[nodiscard]] auto resource() const -> const std::string&;
    /// Every resource this lock covers, in the order given.
    [[nodiscard]] auto resources() const -> const std::vector<std::string>&;
    /// The proof of ownership: 32 hex digits (128 bits from getrandom()),
    /// then "|" and the holder text when there is one. Nodes compare the
    /// whole value, byte for byte.
    [[nodiscard]] auto value() const -> const std::string&;
    /// The holder text in value() (lock_options::holder), or empty.
    [[nodiscard]] auto holder() const -> std::string_view;
    /// End of the validity window on the monotonic clock: wall-clock jumps on
    /// this host neither shorten nor stretch it.
    [[nodiscard]] auto valid_until() const noexcept -> std::chrono::steady_clock::time_point;
    /// Time left before valid_until(), or zero.
    [[nodiscard]] auto remaining() const noexcept -> std::chrono::milliseconds;
    /// True while the validity window is open and the lock was neither released
    /// nor marked lost. Only act on the protected resource while this is true.
    [[nodiscard]] auto valid() const noexcept -> bool;
    [[nodiscard]] auto empty() const noexcept -> bool { return !state_; }

    /// exclusive, shared (a reader) or permit (a semaphore's lease).
    [[nodiscard]] auto kind() const noexcept -> lock_kind;
    /// The permit held (0 to permits - 1), for a semaphore's lease.
    [[nodiscard]] auto permit() const noexcept -> std::optional<int>;
    /// The semaphore's permit count, for a semaphore's lease.
    [[nodiscard]] auto permits() const noexcept -> std::optional<int>;
    /// Reentrant locks (lock_options::owner): the owner, and how many holds
    /// are open (acquisitions not yet matched by a release). 1 otherwise.
    [[nodiscard]] auto owner() const -> const std::string&;
    [[nodiscard]] auto holds() const noexcept -> int;

    /// The fencing token, when the lock was acquired with `fencing`: pass it to
    /// the protected resource, which rejects any write carrying a lower token
    /// than one it has already accepted.
    [[nodiscard]] auto fence() const noexcept -> std::optional<std::uint64_t>;

    /// True once auto-renewal has given up on this lock (a majority refused to
    /// extend it, or no renewal reached a majority before its validity ended).
    [[nodiscard]] auto lost() const noexcept -> bool;
    /// Requested when the lock is lost: poll stop_requested(), or attach a
    /// std::stop_callback, from any thread. Never requested for a lock without
    /// auto-renewal (its end is simply valid_until()).
    [[nodiscard]] auto lost_token() const noexcept -> std::stop_token;

private:
    friend struct detail::lock_state;
    explicit lock(std::shared_ptr<detail::lock_state> state) noexcept : state_{std::move(state)} {}

    std::shared_ptr<detail::lock_state> state_;
};

}  // namespace redlock
