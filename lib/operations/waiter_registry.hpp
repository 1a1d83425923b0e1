#pragma once

// A client's waiting acquisitions, and the subscriber connections that carry
// release notifications to them: one per node, opened while anyone waits (and
// a grace period after). A notification names a waiter; the registry wakes it
// through the waiter interface.

#include "redlock/config.hpp"
#include "transport/node_connection.hpp"
#include "transport/os_random.hpp"
#include "transport/timer_queue.hpp"
#include "transport/write_batcher.hpp"

#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace redlock::detail {

class waiter;

/// The releasing side's way back to a successor: cleared when the successor
/// is destroyed, so that a reply forwarded late finds nobody rather than a
/// dangling pointer.
struct handoff_link {
    waiter* target = nullptr;
};

/// What a release needs to hand the lock to a successor: the value and TTL of
/// the attempt that the release's script grants, and the successor's waiter id
/// (the script hands over only where it is first in line).
struct handoff_offer {
    std::string value;
    std::string ttl_text;
    std::string waiter_id;
    std::uint32_t attempt = 0;
    std::shared_ptr<handoff_link> link;
};

/// A waiting acquisition, as the registry and this client's releases call it:
/// woken by a release notification that names it, and — registered as a
/// successor — granted directly by a release of the same exclusive lock by
/// this client (the hand-off: README, "Waiting without spinning").
class waiter {
public:
    /// A release notification for this waiter: try again now.
    virtual void wake() = 0;
    /// Between attempts: begins one whose grant is the caller's release script,
    /// and returns its terms. Otherwise (an attempt in flight, finishing, or
    /// not a successor) none.
    virtual auto begin_handoff() -> std::optional<handoff_offer> = 0;
    /// One node's answer to that script, as the release received it.
    virtual void on_handoff_reply(std::uint32_t attempt, std::size_t node,
                                  const reply_event& event) = 0;
    /// A release of any client set the key on `node` to the value this waiter's
    /// `attempt` offered there (the hand-off across clients).
    virtual void on_handed(std::size_t node, std::uint32_t attempt) = 0;

protected:
    waiter() = default;
    waiter(const waiter&) = default;
    auto operator=(const waiter&) -> waiter& = default;
    ~waiter() = default;
};

/// The shard channel a waiter listens on (empty: none).
struct entry_shard {
    std::string channel;
    std::uint16_t slot = 0;
};

class waiter_registry {
public:
    waiter_registry(uv_loop_t* loop, write_batcher& batcher, const client_config& config,
                    random_source& rng, timer_queue& timers);
    waiter_registry(const waiter_registry&) = delete;
    auto operator=(const waiter_registry&) -> waiter_registry& = delete;
    ~waiter_registry() = default;

    /// The channel this client's notifications arrive on.
    void set_channel(std::string channel) { channel_ = std::move(channel); }
    /// The client's TLS context (null: plain TCP), for the subscriber connections.
    void set_tls(std::shared_ptr<const tls_context> tls) { tls_ = std::move(tls); }
    /// `w` waits under `id`: woken by a notification naming it until removed.
    /// Opens the subscriber connections if they are not open.
    void add(const std::string& id, waiter* w);
    /// Also a successor for releases of `lock_key` by this client, ordered by
    /// `arrival` (its queue score on every node), then `ticket`.
    void add(const std::string& id, waiter* w, const std::string& lock_key, std::uint64_t arrival,
             std::uint64_t ticket);
    /// The first successor in arrival order waiting for `lock_key`, if any.
    [[nodiscard]] auto first_successor(std::string_view lock_key) const -> waiter*;
    /// Some successor waits for some lock: asked first by every release, so that
    /// one with nobody waiting builds no key and looks nothing up.
    [[nodiscard]] auto has_successors() const noexcept -> bool { return !successors_.empty(); }
    /// Idempotent. When the last waiter leaves, the connections close after a
    /// grace period, so that a steady stream of waiters does not open and close
    /// them all the time.
    void remove(const std::string& id);
    /// Cluster members: waiter `id` (added already) hears of releases on the shard
    /// `channel`, in `slot` (empty: none). The watcher (set_shard_watcher) is told when a
    /// channel gains its first waiter and loses its last.
    void watch_shard(const std::string& id, std::string channel, std::uint16_t slot);
    using shard_watcher =
        std::function<void(const std::string& channel, std::uint16_t slot, bool on)>;
    void set_shard_watcher(shard_watcher fn) { shard_watcher_ = std::move(fn); }
    /// Whether the cluster and Sentinel members' own subscriptions are confirmed.
    void set_routed_hearing(std::function<bool()> fn) { routed_hearing_ = std::move(fn); }
    /// A release notification from any subscriber: "<waiter id>|<released value>"
    /// (a wake-up), or "<waiter id>+<attempt>" (granted by a release on the node
    /// that sent it). `node`: the quorum member it came from, if known; a grant
    /// from an unknown one is only a wake-up (the next attempt takes the key over).
    void on_message(std::string_view message, std::optional<std::size_t> node = std::nullopt);

    /// Opens the subscriber connections now, before anyone waits (a process
    /// that is about to wait: client::open_wake_connections). With nobody
    /// waiting they close after the same grace period as when the last waiter
    /// leaves.
    void open();

    /// Every node's subscriber connection has confirmed its SUBSCRIBE: a
    /// release notification can reach this client.
    [[nodiscard]] auto subscribed() const noexcept -> bool;
    /// SUBSCRIBEs confirmed so far, every (re)connection counted: unchanged
    /// between two moments subscribed() at both, none was lost in between.
    [[nodiscard]] auto subscriptions() const noexcept -> std::uint64_t {
        return counters_.connects.load(std::memory_order_relaxed);
    }

    /// Shutdown: forgets every waiter and closes every subscriber connection;
    /// `on_closed` runs once per connection closed. Returns how many there are.
    /// Nothing opens afterwards.
    auto close(const std::function<void()>& on_closed) -> std::size_t;

    // Gauges for client_stats, read from any thread.
    [[nodiscard]] auto waiter_count() const noexcept -> std::size_t {
        return waiter_gauge_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] auto connection_count() const noexcept -> std::size_t {
        return connection_gauge_.load(std::memory_order_relaxed);
    }
    /// Subscriber connections whose SUBSCRIBE has been answered.
    [[nodiscard]] auto ready_count() const noexcept -> std::size_t {
        return counters_.connected.load(std::memory_order_relaxed);
    }

private:
    void open_connections();
    void close_connections();
    /// Nobody waits: close the connections after the grace period, unless someone comes.
    void close_when_idle();
    void unwatch_shard(entry_shard& shard);

    uv_loop_t* loop_;
    write_batcher& batcher_;
    const client_config& config_;
    random_source& rng_;
    timer_queue& timers_;
    std::string channel_;
    std::shared_ptr<const tls_context> tls_;
    connection_counters counters_;  // kept apart from the lock nodes' (stats describes those)
    using successor_order = std::pair<std::uint64_t, std::uint64_t>;  // arrival, ticket
    struct entry {
        waiter* w = nullptr;
        std::string lock_key;  // empty: not a successor
        successor_order order{};
        entry_shard shard;
    };
    std::map<std::string, int> shard_watchers_;  // shard channel -> waiters on it
    shard_watcher shard_watcher_;
    std::function<bool()> routed_hearing_;
    std::unordered_map<std::string, entry> waiters_;
    std::unordered_map<std::string, std::map<successor_order, waiter*>> successors_;
    std::vector<std::unique_ptr<node_connection>> connections_;  // one per node while anyone waits
    std::list<std::unique_ptr<node_connection>> closing_;
    std::optional<timer_queue::key> idle_timer_;
    std::atomic<std::size_t> waiter_gauge_{0};
    std::atomic<std::size_t> connection_gauge_{0};
    bool closed_ = false;
};

}  // namespace redlock::detail
