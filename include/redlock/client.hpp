#pragma once

#include "redlock/config.hpp"
#include "redlock/diagnostics.hpp"
#include "redlock/election.hpp"
#include "redlock/error.hpp"
#include "redlock/export.hpp"
#include "redlock/lock.hpp"
#include "redlock/metrics.hpp"
#include "redlock/operator_tools.hpp"
#include "redlock/result.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

struct uv_loop_s;  // libuv's loop; libuv's headers stay out of ours

namespace redlock {

namespace detail {
class client_core;
}

// The coroutine awaiters: defined in redlock/coro.hpp, which a co_await needs.
class acquire_awaiter;
class extend_awaiter;
class release_awaiter;
class campaign_awaiter;

/// What a release did: how many nodes actually deleted the key (those where it
/// still held our value), and each node's outcome.
struct release_report {
    std::size_t deleted = 0;
    std::size_t quorum = 0;
    /// Nodes that had not answered when the release was decided (see
    /// node_status::pending): it returns once a majority has deleted, or once
    /// no majority can, rather than wait for a hung node's request_timeout.
    std::size_t pending = 0;
    std::vector<node_report> nodes;
    /// Reentrant locks (lock_options::owner): holds still open after this
    /// release. When it is above 0 nothing was sent to the nodes (deleted is
    /// 0, nodes empty) and the lock stays valid for the remaining holders.
    int holds_left = 0;

    /// True when a majority deleted the key.
    [[nodiscard]] auto majority() const noexcept -> bool { return deleted >= quorum; }
};

/// Counters since the client started. A snapshot; cheap to take.
struct client_stats {
    std::uint64_t acquire_calls = 0;
    std::uint64_t acquired = 0;
    std::uint64_t acquire_failures = 0;
    std::uint64_t attempts = 0;
    std::uint64_t releases = 0;
    std::uint64_t extends = 0;
    std::uint64_t renewals = 0;    ///< automatic extensions that succeeded
    std::uint64_t locks_lost = 0;  ///< auto-renewed locks given up
    std::uint64_t requests = 0;    ///< commands sent to nodes, all kinds
    std::uint64_t timeouts = 0;    ///< requests that missed request_timeout
    std::uint64_t writes = 0;      ///< socket writes, all nodes: commands queued in one loop turn
                                   ///< leave in one write per node for every 8 KiB
    std::uint64_t node_restarts = 0;     ///< nodes seen coming back with a new run_id
    std::uint64_t node_clock_steps = 0;  ///< node clocks seen stepping (README, "Clock steps")
    std::uint64_t connects = 0;  ///< (re)connections whose handshake was answered, all nodes
    /// Nodes connected and past their handshake (AUTH, SCRIPT LOAD, INFO): a node
    /// that accepts connections but answers nothing is not counted.
    std::size_t nodes_connected = 0;
    std::size_t waiters = 0;                 ///< acquisitions waiting for a release notification
    std::size_t subscriber_connections = 0;  ///< open while anyone waits (and a grace period)
    /// Subscriber connections whose SUBSCRIBE has been answered: release
    /// notifications reach this client on them.
    std::size_t subscribers_ready = 0;
    /// Operations alive: acquisitions, releases, extends and probes in progress,
    /// plus acquisitions held back by max_concurrent_acquisitions. A decided
    /// acquisition does not stay alive for its slowest nodes' replies.
    std::size_t operations = 0;
    /// Releases return once decided (a majority deleted, or none can): the
    /// nodes that had not answered by then are reported node_status::pending,
    /// and what they answer afterwards is counted here. deleted: the key was
    /// still ours there and is gone; failed: refused, error, timeout or
    /// unreachable.
    std::uint64_t release_late_deleted = 0;
    std::uint64_t release_late_failed = 0;
    /// Acquisitions granted by a release of this client handing the lock over
    /// (a waiter first in line everywhere: no attempt of its own). Counted in
    /// `acquired` too.
    std::uint64_t handoffs = 0;
};

/// A Redlock client over a fixed set of independent Redis masters.
///
/// Threads: a client made by `create(config)` owns an event-loop thread, and
/// every member function may be called from any thread. A client made by
/// `create(config, loop)` runs on the caller's libuv loop, and its members must
/// be called on that loop's thread.
///
/// Callbacks run on the loop thread, exactly once, and never inside the call
/// that started the operation. Keep them short; a blocking member called from
/// inside one returns errc::would_deadlock.
///
/// Lifetime: destroying the client (or calling shutdown()) completes pending
/// acquisitions with errc::client_stopped after releasing what they had been
/// granted, lets pending releases finish (bounded by request_timeout), closes
/// every connection and handle, and — for an owned loop — joins its thread.
/// With an attached loop, keep running the loop until it has no more work.
class REDLOCK_API client {
public:
    using acquire_callback = std::function<void(result<lock>)>;
    using release_callback = std::function<void(result<release_report>)>;
    /// Receives the validity left after a successful extend.
    using extend_callback = std::function<void(result<std::chrono::milliseconds>)>;
    /// Names an acquisition in flight, for cancel(). Never 0. A moved-from
    /// client's calls fail with errc::client_stopped, their callbacks on a
    /// thread of their own (still never inside the call).
    using acquire_ticket = std::uint64_t;

    /// Validates `config` and starts the loop thread. Nodes are connected in the
    /// background: one being down is not an error, since Redlock tolerates a
    /// minority of them. Fails only with errc::invalid_config.
    [[nodiscard]] static auto create(client_config config) -> result<client>;
    /// Same, on the caller's loop (see the thread contract above).
    [[nodiscard]] static auto create(client_config config, uv_loop_s* loop) -> result<client>;

    client(client&&) noexcept;
    auto operator=(client&&) noexcept -> client&;
    client(const client&) = delete;
    auto operator=(const client&) -> client& = delete;
    ~client();

    /// Tries to lock `resource` on a majority of nodes, retrying after a random
    /// delay until the attempt budget or the wait deadline is spent. On failure
    /// the key is released on every node (errored and timed-out ones included)
    /// before `done` runs. Errors: contended, quorum_unreachable,
    /// validity_expired, invalid_argument, cancelled, client_stopped.
    auto acquire_async(std::string resource, lock_options options, acquire_callback done)
        -> acquire_ticket;
    /// Blocking form of acquire_async. Also: would_deadlock on the loop thread.
    /// Requesting a stop on `stop` cancels it (errc::cancelled).
    [[nodiscard]] auto acquire(std::string resource, lock_options options = {},
                               std::stop_token stop = {}) -> result<lock>;

    /// One lock over several resources: on each node all of them are set or
    /// none (one script per node), and a majority of nodes must grant the whole
    /// set. extend and release act on the whole set. Fencing is not available
    /// for such a lock (invalid_argument).
    auto acquire_all_async(std::vector<std::string> resources, lock_options options,
                           acquire_callback done) -> acquire_ticket;
    [[nodiscard]] auto acquire_all(std::vector<std::string> resources, lock_options options = {},
                                   std::stop_token stop = {}) -> result<lock>;

    /// Cancels an acquisition in flight: whatever it had been granted is
    /// released, then its callback runs once with errc::cancelled. Does nothing
    /// if it already completed.
    void cancel(acquire_ticket ticket);

    /// Extends the lock's TTL on every node where it still holds our value
    /// (a compare-and-PEXPIRE that never shortens a TTL). Succeeds when a
    /// majority confirm before the current validity ends. The validity passed
    /// to `done` is what the lock really has: the lowest TTL the confirming
    /// nodes report, less the time since the extend's start and clock drift,
    /// and never less than the old deadline (a shorter `ttl` than the lock has
    /// left shortens nothing). A failed
    /// extend never shortens what was held: the handle stays valid until its
    /// old deadline. Errors: not_held (a majority no longer hold it, or it had
    /// already expired, been released or lost), quorum_unreachable,
    /// invalid_argument, client_stopped.
    void extend_async(const lock& held, std::chrono::milliseconds ttl, extend_callback done);
    [[nodiscard]] auto extend(const lock& held, std::chrono::milliseconds ttl)
        -> result<std::chrono::milliseconds>;

    /// Compare-and-delete on every node: a node deletes the key only if it still
    /// holds this lock's value. The report counts the nodes that did. Marks the
    /// handle invalid at once. Errors: invalid_argument (empty handle),
    /// client_stopped.
    void release_async(const lock& held, release_callback done);
    [[nodiscard]] auto release(const lock& held) -> result<release_report>;

    /// A session (README, "Sessions"): locks acquired with lock_options::session
    /// share its TTL and its renewals — one script call per node per tick for
    /// all of them — and its one on_lost when it is lost. Opening one sends
    /// nothing; its renewals start with its first lock. Errors:
    /// invalid_argument (a TTL out of range, cluster members), client_stopped.
    [[nodiscard]] auto open_session(session_options options = {}) -> result<session>;
    using close_callback = std::function<void(result<session_close_report>)>;
    /// Closes `open`: no lock joins it any more, and each of its locks is
    /// released (the report counts those a majority deleted). Errors:
    /// invalid_argument (an empty handle), client_stopped.
    void close_session_async(const session& open, close_callback done);
    [[nodiscard]] auto close_session(const session& open) -> result<session_close_report>;

    /// A handle for a lock acquired elsewhere — another process that printed
    /// its value (the CLI's `acquire`). Knowing the value is the proof of
    /// ownership, so release and extend work on it; its validity is unknown
    /// here until an extend succeeds, so valid() is false until then.
    [[nodiscard]] auto adopt(std::string resource, std::string value) const -> lock;
    /// Same, for a reader (lock_kind::shared) or a semaphore's permit
    /// (lock_kind::permit, with the semaphore's permit count: the permit is
    /// found on each node by its value).
    [[nodiscard]] auto adopt(std::string resource, std::string value, lock_kind kind,
                             int permits = 0) const -> lock;

    /// Every node's view of `resource`: holder value, remaining TTL, fencing
    /// counter, live readers; and the holder (or the readers) a majority agree
    /// on. Read-only, one round trip. Errors: invalid_argument, client_stopped.
    void status_async(std::string resource, std::function<void(result<lock_status>)> done);
    [[nodiscard]] auto status(std::string resource) -> result<lock_status>;
    /// A semaphore of `permits` permits (lock_options::permits): every node's
    /// view of each permit, the holder a majority agree on per permit, and the
    /// count each node knows. Read-only, one round trip. Errors:
    /// invalid_argument (an empty resource, permits outside 1..max_permits),
    /// client_stopped.
    void status_async(std::string resource, int permits,
                      std::function<void(result<semaphore_status>)> done);
    [[nodiscard]] auto status(std::string resource, int permits) -> result<semaphore_status>;

    /// An audited break (README, "Operators' tools"): deletes whatever holds
    /// `resource` on every node (a writer, live readers, and with
    /// options.permits a semaphore's permits), whoever holds it, and appends
    /// an entry per hold to the resource's audit stream there. The broken
    /// holders' renewals fail, and their on_lost says "broken by <breaker>:
    /// <reason>". Errors: invalid_argument (an empty reason, a bad resource,
    /// breaker or permits), client_stopped. The report says on how many
    /// nodes it ran: without a majority the holders may renew and repair.
    void force_release_async(std::string resource, std::string reason,
                             force_release_options options,
                             std::function<void(result<break_report>)> done);
    [[nodiscard]] auto force_release(std::string resource, std::string reason,
                                     force_release_options options = {}) -> result<break_report>;
    /// The newest `limit` breaks of `resource` from every node's audit stream:
    /// those a majority recorded, and apart those fewer did. An empty
    /// `resource` reads every resource's: the `limit` most recently broken
    /// (an index each break adds to), each one's newest `limit`. Read-only.
    void audit_async(std::string resource, std::size_t limit,
                     std::function<void(result<audit_log>)> done);
    [[nodiscard]] auto audit(std::string resource, std::size_t limit = 100) -> result<audit_log>;
    /// Chubby's CheckSequencer: is `token` the current fencing token of a lock
    /// a majority holds right now? Read-only, one round trip; true only when
    /// read (README, "Checking a fence token"). Errors: invalid_argument,
    /// client_stopped.
    void check_fence_async(std::string resource, std::uint64_t token,
                           std::function<void(result<fence_check>)> done);
    [[nodiscard]] auto check_fence(std::string resource, std::uint64_t token)
        -> result<fence_check>;

    /// Every node's health: reachable, round-trip time, Redis version, run_id,
    /// role, and whether it persists every write. Read-only.
    void check_async(std::function<void(result<cluster_health>)> done);
    [[nodiscard]] auto check() -> result<cluster_health>;

    /// The locks on the nodes (README, "Listing locks"): each node's keys under
    /// key_prefix walked with SCAN, each round's keys read by one read-only
    /// script; what a majority hold (writers, readers, permits: holder, time left,
    /// fencing counter, how many nodes) and, apart, what fewer hold. Bounded by
    /// `options.limit` keys per node and `options.budget`; `complete` says whether
    /// every node was scanned to the end. Errors: invalid_argument (a cluster
    /// member, a limit of 0, a batch outside 1..10000), client_stopped.
    void list_async(list_options options, std::function<void(result<lock_listing>)> done);
    [[nodiscard]] auto list(list_options options = {}) -> result<lock_listing>;

    /// Leader election (README, "Leader election"). Waits, in arrival order
    /// (wait_mode::fair), until this client leads `name`: it holds the
    /// election's lock (auto-renewed, with a fencing token: the term) and has
    /// proclaimed `proposal` on a majority. Errors: invalid_argument,
    /// contended (max_wait passed), cancelled (cancel(ticket) or the stop
    /// token), quorum_unreachable or not_held (the proposal could not be
    /// stored; the lock was released), client_stopped.
    using campaign_callback = std::function<void(result<leadership>)>;
    auto campaign_async(std::string name, std::string proposal, campaign_options options,
                        campaign_callback done) -> acquire_ticket;
    [[nodiscard]] auto campaign(std::string name, std::string proposal,
                                campaign_options options = {}, std::stop_token stop = {})
        -> result<leadership>;
    /// Who leads `name`, as a majority of the nodes say: read-only, one round
    /// trip. No leader is not an error (view.leader is empty). Errors:
    /// invalid_argument, quorum_unreachable (fewer than a majority answered),
    /// client_stopped.
    void leader_async(std::string name, std::function<void(result<election_view>)> done);
    [[nodiscard]] auto leader(std::string name) -> result<election_view>;
    /// Follows `name`: `on_change` gets the current view once read, then each
    /// change of leader, term or proclaimed value (validity aside), on the loop
    /// thread, until the observation is stopped or destroyed. Changes are
    /// pushed over the wake-up subscriptions; a leader that vanishes without a
    /// word (crashed) is reported once its validity has run out. Errors:
    /// invalid_argument, client_stopped.
    [[nodiscard]] auto observe(std::string name,
                               std::function<void(const election_view&)> on_change)
        -> result<observation>;

    /// Opens now the connections that carry release notifications (one
    /// SUBSCRIBE per node), which the first waiting acquisition would open
    /// otherwise; they close again after a grace period (2 s) in which nobody
    /// waits. For a process that is about to wait (the CLI's `--wait-ms`): once
    /// they are answered (client_stats::subscribers_ready), a refused attempt
    /// can sleep until the holder's release wakes it, instead of looking again
    /// after 2 x request_timeout in case a release went unheard. Returns at
    /// once; nothing happens on a stopped client.
    void open_wake_connections();

    [[nodiscard]] auto stats() const -> client_stats;
    /// Latency histograms, per-node state and gauges (metrics.hpp); render
    /// them with to_prometheus(). Cheap: a few hundred atomic loads.
    [[nodiscard]] auto metrics() const -> metrics_snapshot;
    /// The configuration the client runs with (a default one, with no nodes,
    /// for a moved-from client).
    [[nodiscard]] auto config() const -> const client_config&;
    [[nodiscard]] auto node_count() const noexcept -> std::size_t;

    /// C++20 coroutines (include redlock/coro.hpp; README, "Coroutines"):
    /// `co_await` one for the result its callback form would deliver. The
    /// coroutine resumes on the loop thread. A stop requested on `stop`
    /// cancels the acquisition (errc::cancelled).
    [[nodiscard]] auto async_acquire(std::string resource, lock_options options = {},
                                     std::stop_token stop = {}) -> acquire_awaiter;
    [[nodiscard]] auto async_acquire_all(std::vector<std::string> resources,
                                         lock_options options = {}, std::stop_token stop = {})
        -> acquire_awaiter;
    [[nodiscard]] auto async_extend(const lock& held, std::chrono::milliseconds ttl)
        -> extend_awaiter;
    [[nodiscard]] auto async_release(const lock& held) -> release_awaiter;
    /// `co_await` a campaign: a stop requested on `stop` cancels its wait.
    [[nodiscard]] auto async_campaign(std::string name, std::string proposal,
                                      campaign_options options = {}, std::stop_token stop = {})
        -> campaign_awaiter;

    /// Stops the client now (see Lifetime above). Idempotent.
    void shutdown();

private:
    friend class guard;
    explicit client(std::shared_ptr<detail::client_core> core) noexcept;

    std::shared_ptr<detail::client_core> core_;
};

/// Releases its lock when it goes out of scope.
///
/// The destructor neither throws nor blocks: it queues the release on the
/// client's loop. Call release() when the outcome matters. A guard may outlive
/// its client; the key then simply expires on the nodes.
class [[nodiscard]] REDLOCK_API guard {
public:
    guard(client& owner, lock held);
    guard(guard&& other) noexcept;
    auto operator=(guard&& other) noexcept -> guard&;
    guard(const guard&) = delete;
    auto operator=(const guard&) -> guard& = delete;
    ~guard();

    [[nodiscard]] auto get() const noexcept -> const lock& { return lock_; }
    [[nodiscard]] auto valid() const noexcept -> bool { return lock_.valid(); }

    /// Releases now and waits for the report. The guard is empty afterwards.
    auto release() -> result<release_report>;

private:
    void release_in_background() noexcept;

    std::shared_ptr<detail::client_core> core_;
    lock lock_;
};

}  // namespace redlock
