#pragma once

#include "redlock/export.hpp"
#include "redlock/lock.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

/// A reader of a read-write lock (lock_options::shared) as one node sees it.
struct node_reader {
    std::string value;
    std::optional<std::chrono::milliseconds> ttl;  ///< remaining TTL of its reader key
};

/// What one node says about one resource (client::status).
struct node_lock_state {
    std::string node;
    bool reachable = false;
    std::string detail;  ///< why not reachable, or a Redis error
    /// The exclusive holder's (the writer's) value, if one holds the key. Never
    /// the readers' marker: when readers hold, this is unset and `shared` is true.
    std::optional<std::string> holder;
    /// Remaining TTL of the lock key, if it exists: the writer's, or with
    /// readers the marker's (as long as the longest reader's).
    std::optional<std::chrono::milliseconds> ttl;
    std::optional<std::uint64_t> fence;  ///< the fencing counter, if one was ever written
    /// Readers hold the resource on this node (the lock key holds their marker).
    bool shared = false;
    /// The readers alive on this node (their reader key exists), ordered by
    /// value. Entries of readers whose key expired are left out.
    std::vector<node_reader> readers;
};

/// client::status: every node's view, and whether a majority agree on one holder.
struct lock_status {
    std::string resource;
    std::size_t quorum = 0;
    std::vector<node_lock_state> nodes;
    /// The value held on a majority of nodes, if any: the current holder (the
    /// writer, for a read-write lock). Never the readers' marker.
    std::optional<std::string> majority_holder;
    /// The highest fencing counter any reachable node reported.
    std::optional<std::uint64_t> fence;
    /// The readers holding the resource: each is alive on a majority of nodes.
    /// Ordered by value.
    std::vector<std::string> majority_readers;
    /// True when readers hold the resource (some reader is alive on a majority).
    [[nodiscard]] auto shared() const noexcept -> bool { return !majority_readers.empty(); }
};

/// One permit of a semaphore as one node sees it.
struct node_permit_state {
    std::optional<std::string> holder;             ///< the value stored, if the permit key exists
    std::optional<std::chrono::milliseconds> ttl;  ///< its remaining TTL
};

/// One permit of a semaphore across the nodes.
struct permit_state {
    int permit = 0;  ///< the index, 0 to permits - 1
    /// Every node's view of this permit, in the order of semaphore_status::nodes
    /// (an unreachable node's view is empty).
    std::vector<node_permit_state> nodes;
    /// The value holding the permit on a majority of nodes, if any: its holder.
    std::optional<std::string> majority_holder;
    /// True when any node has this permit held (by a majority or not).
    [[nodiscard]] auto held_anywhere() const noexcept -> bool {
        for (const auto& n : nodes) {
            if (n.holder) return true;
        }
        return false;
    }
};

/// What one node says about a semaphore as a whole.
struct node_semaphore_state {
    std::string node;
    bool reachable = false;
    std::string detail;  ///< why not reachable, or a Redis error
    /// The permit count this node knows for the resource, if any (it is kept
    /// while a permit is held there, and refuses users naming another count).
    std::optional<int> permits;
};

/// client::status(resource, permits): who holds each permit of a semaphore.
struct semaphore_status {
    std::string resource;
    int permits = 0;  ///< the count asked about
    std::size_t quorum = 0;
    std::vector<node_semaphore_state> nodes;
    /// One entry per permit: permit_holders[i].permit == i.
    std::vector<permit_state> permit_holders;
    /// How many permits a majority agree are held.
    [[nodiscard]] auto held() const noexcept -> int {
        int n = 0;
        for (const auto& p : permit_holders) n += p.majority_holder ? 1 : 0;
        return n;
    }
};

/// The TLS session a node was reached over (node_health::tls), as negotiated.
struct tls_info {
    std::string version;  ///< the protocol, as OpenSSL names it: "TLSv1.3", "TLSv1.2"
    std::string cipher;   ///< the cipher suite: "TLS_AES_256_GCM_SHA384"
    /// The node's certificate chained to a trusted CA and carried the name or
    /// address checked (tls_options::server_name, else the node's host). False
    /// only when tls_options::verify is off: with it on, a certificate that
    /// fails refuses the node at the handshake, and it is unreachable.
    bool verified = false;
};

/// Whether a server persists every write it acknowledges: appendonly yes and
/// appendfsync always. False when unknown (CONFIG GET refused, not answered).
[[nodiscard]] inline auto persists_every_write(const std::optional<bool>& aof_enabled,
                                               const std::optional<std::string>& appendfsync)
    -> bool {
    return aof_enabled.value_or(false) && appendfsync.value_or("") == "always";
}

/// A replica of a master (master_health::replicas), as the master and its
/// cluster or its sentinels report it.
struct replica_health {
    std::string address;  ///< "host:port", as announced
    /// "online" (the master streams to it), "syncing" (a full or partial
    /// resynchronisation), "down" (flagged failed or down by the cluster or the
    /// sentinels), or "not connected" (known, but not connected to the master).
    std::string state;
    /// Its lag behind the master in seconds, as the master reports it (INFO replication).
    std::optional<long long> lag_seconds;
};

/// One master of a cluster or Sentinel member (node_health::masters), probed
/// on its own: every master serving slots of a cluster, the master Sentinel
/// names.
struct master_health {
    std::string address;  ///< "host:port" as the client reaches it
    /// The slot ranges it serves in the client's slot map ("0-5460, 5462"); empty
    /// for a Sentinel-managed master, which holds every key.
    std::string slots;
    std::size_t slot_count = 0;
    bool reachable = false;  ///< it answered
    std::string detail;      ///< why not: the transport's cause or the error it answered
    std::chrono::microseconds round_trip{0};
    std::string redis_version;
    std::string run_id;
    std::string role;  ///< "master", or "slave" for a server that is no master (any more)
    std::optional<bool> aof_enabled;
    std::optional<std::string> appendfsync;
    std::optional<tls_info> tls;
    /// A cluster node's own view (CLUSTER INFO): "ok" or "fail"; empty for Sentinel.
    std::string cluster_state;
    /// Its replicas, known ones included when they are not connected.
    std::vector<replica_health> replicas;
    [[nodiscard]] auto can_lose_writes() const noexcept -> bool {
        return !persists_every_write(aof_enabled, appendfsync);
    }
};

/// What one node says about itself (client::check).
struct node_health {
    std::string node;
    /// The node answered; for a cluster member, at least one of its masters did,
    /// for a Sentinel member its master did. Whether it can take every lock is
    /// serving().
    bool reachable = false;
    std::string detail;  ///< why not reachable
    std::chrono::microseconds round_trip{0};
    std::string redis_version;
    std::string run_id;
    std::string role;  ///< "master", or "slave" for a replica
    /// A cluster or Sentinel member's topology, a line each: its masters, the
    /// slots each serves and whether it answered, its replicas, what is in
    /// quarantine; the master Sentinel names and how many sentinels answer.
    /// Empty for a standalone master. The other fields describe the first master
    /// that answered (in slot order for a cluster); `masters` has each one.
    std::vector<std::string> topology;
    std::optional<bool> aof_enabled;  ///< appendonly
    std::optional<std::string>
        appendfsync;  ///< "always", "everysec", "no"; unknown if CONFIG is disabled
    /// The TLS session of the connection that answered; unset when the node
    /// was reached in plain text (no client_config::tls, "tls": false for the
    /// node, a Unix socket) or not reached at all.
    std::optional<tls_info> tls;
    /// A cluster member's masters (in slot order), a Sentinel member's master;
    /// empty for a standalone master.
    std::vector<master_health> masters;
    /// A cluster member's cluster_state as its masters report it (CLUSTER INFO):
    /// "fail" when any master that answered says so, else "ok"; empty otherwise.
    std::string cluster_state;
    /// A cluster member's slots that no master serves now, as ranges ("5461-10922"):
    /// in no master's range of the slot map, or served by a master that did not
    /// answer or that its cluster flags as failed.
    std::string unserved_slots;
    std::size_t unserved_slot_count = 0;
    /// Why the member can never grant a lock as configured: a seed that is not in
    /// cluster mode, a master name no sentinel knows, wait_replicas above the
    /// replicas a master has. `redlock check` exits 78 on any.
    std::vector<std::string> configuration_errors;
    /// Why the member cannot grant every lock now, though it answered: a master
    /// down, cluster_state:fail, slots no master serves, fewer replicas connected
    /// than wait_replicas.
    std::vector<std::string> problems;
    /// Where its guarantee is weaker than the README's: a member whose masters
    /// have replicas, without wait_replicas.
    std::vector<std::string> warnings;
    /// The failovers the servers report: for Sentinel, how long ago the master
    /// took its role and its config-epoch; for a cluster, nodes it flags as
    /// failed; and a quarantine this client is keeping after one.
    std::vector<std::string> failovers;
    /// True when the node may forget a lock it acknowledged if it crashes: it
    /// does not persist every write (appendonly yes + appendfsync always). For a
    /// cluster or Sentinel member: any of its masters that answered.
    [[nodiscard]] auto can_lose_writes() const noexcept -> bool {
        for (const auto& m : masters) {
            if (m.reachable && m.can_lose_writes()) return true;
        }
        return !persists_every_write(aof_enabled, appendfsync);
    }
    /// It can take a lock on any resource now: reachable, configured right, and
    /// no problem.
    [[nodiscard]] auto serving() const noexcept -> bool {
        return reachable && configuration_errors.empty() && problems.empty();
    }
};

/// Configured nodes that are one Redis server: they reported the same run_id
/// in INFO server. validate_config rejects the aliases it can see in the
/// spelling (localhost and 127.0.0.1, "::1" and "0:0:0:0:0:0:0:1"); this finds
/// the others, such as 127.0.0.1 and 127.0.0.2 reaching a server bound to both,
/// or a TCP port and the same server's Unix socket. Such a server grants a lock
/// once however often it is listed, so the cluster tolerates fewer failures
/// than its node count suggests.
struct duplicate_server {
    std::string run_id;
    /// Positions in the configuration (and in cluster_health::nodes),
    /// ascending; at least two.
    std::vector<std::size_t> nodes;
};

/// The groups of `nodes` that reported one run_id, ordered by their first
/// node. A node without a run_id (unreachable, or INFO refused) is in none.
[[nodiscard]] REDLOCK_API auto find_duplicate_servers(const std::vector<node_health>& nodes)
    -> std::vector<duplicate_server>;

struct cluster_health {
    std::size_t quorum = 0;
    std::vector<node_health> nodes;
    /// find_duplicate_servers(nodes), filled by client::check.
    std::vector<duplicate_server> duplicates;
    /// How many servers the nodes are at most: each group of duplicates counts
    /// once, and a node whose run_id is unknown counts as a server of its own.
    [[nodiscard]] auto servers() const noexcept -> std::size_t {
        std::size_t n = nodes.size();
        for (const auto& d : duplicates) n -= d.nodes.size() - 1;
        return n;
    }
    [[nodiscard]] auto reachable() const noexcept -> std::size_t {
        std::size_t n = 0;
        for (const auto& h : nodes) n += h.reachable ? 1 : 0;
        return n;
    }
    /// The nodes that can take a lock on any resource now (node_health::serving).
    [[nodiscard]] auto serving() const noexcept -> std::size_t {
        std::size_t n = 0;
        for (const auto& h : nodes) n += h.serving() ? 1 : 0;
        return n;
    }
    /// A lock can be had: at least `quorum` nodes are serving.
    [[nodiscard]] auto quorum_reachable() const noexcept -> bool { return serving() >= quorum; }
    /// The nodes that can never grant a lock as configured.
    [[nodiscard]] auto misconfigured() const noexcept -> std::size_t {
        std::size_t n = 0;
        for (const auto& h : nodes) n += h.configuration_errors.empty() ? 0 : 1;
        return n;
    }
};

/// What client::list looks for, and how far it may go (README, "Listing locks").
struct list_options {
    /// Only resources that begin with this (as listed: "orders:42", not its key's
    /// "{orders:42}"). Empty: every lock under the config's key_prefix.
    std::string prefix;
    /// The most lock keys each node's scan collects (keys of the layout under
    /// key_prefix whose resource matches; a fencing counter read along does not
    /// count). A node with more stops there, and the listing is not complete.
    std::size_t limit = 1000;
    /// How long the listing may go on scanning: no new SCAN round starts after it
    /// (the rounds in flight finish, each bounded by request_timeout). 0: 20
    /// request_timeouts, and at least a second.
    std::chrono::milliseconds budget{0};
    /// SCAN's COUNT hint per round (1 to 10000): how much of a node's keyspace one
    /// round walks.
    std::size_t batch = 100;
};

/// A lock (one holder of a resource: a writer, a reader or a permit) as the nodes
/// that hold it agree on it.
struct listed_lock {
    std::string resource;
    lock_kind kind = lock_kind::exclusive;
    std::string value;           ///< the stored value: token, then "|" and the holder text
    std::string holder;          ///< holder_of(value): the holder text, or empty
    std::optional<int> permit;   ///< a permit's index
    std::optional<int> permits;  ///< a semaphore's K, as its nodes store it
    /// The nodes that hold this value, by name, in configuration order.
    std::vector<std::string> held_on;
    /// How long it is still held on enough of them: for a lock held on a quorum,
    /// until fewer than a quorum keep it (the quorum-th longest TTL of its nodes);
    /// for a leftover, until the last of its nodes lets it go (the longest).
    /// Unset when that node's key has no TTL.
    std::optional<std::chrono::milliseconds> expires_in;
    /// The resource's fencing counter (the highest any node reported), if one was ever written.
    std::optional<std::uint64_t> fence;
};

/// One node's part in a listing.
struct node_listing {
    std::string node;
    bool reachable = false;  ///< its first SCAN was answered
    bool complete = false;   ///< it was scanned to the end and every key read
    std::string detail;      ///< why not: the limit, the budget, an error or the transport's cause
    std::size_t keys = 0;    ///< lock keys collected
    std::uint64_t rounds = 0;  ///< SCAN rounds sent
};

/// client::list: the locks a majority of nodes hold, and what only some hold.
struct lock_listing {
    std::size_t quorum = 0;
    /// Held on at least `quorum` nodes; ordered by resource, kind, permit, value.
    std::vector<listed_lock> locks;
    /// Held on fewer: what a failed acquisition, a node that missed a release or a
    /// restart left behind. They expire by their TTL. Same order.
    std::vector<listed_lock> leftovers;
    std::vector<node_listing> nodes;
    /// Every node was scanned to the end. When false, `locks` may miss locks, and a
    /// lock held on a quorum may appear as a leftover (its other nodes were not
    /// scanned as far): `truncated_reason` says why.
    bool complete = false;
    std::string truncated_reason;
    [[nodiscard]] auto reachable() const noexcept -> std::size_t {
        std::size_t n = 0;
        for (const auto& node : nodes) n += node.reachable ? 1 : 0;
        return n;
    }
};

}  // namespace redlock
