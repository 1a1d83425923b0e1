#pragma once

#include "support/redis_server.hpp"

#include <redlock/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace redlock_test {

struct cluster_member_options {
    int shards = 3;    ///< masters, 1..3; the 16384 slots are split evenly between them
    int replicas = 0;  ///< replicas per master, 0..1
    std::chrono::milliseconds node_timeout{1000};
    /// What every node gets on top (extra arguments, credentials, TLS). With a password the
    /// nodes also get --masterauth (and --masteruser), and MIGRATE authenticates; with TLS,
    /// --tls-cluster and --tls-replication, so that the bus, replication and the announced
    /// ports are all TLS, and the listener's client certificate (if any) for the connections
    /// nodes open to each other.
    server_options server;
};

/// One Redis Cluster on loopback ports, as one quorum member of a Redlock: `shards` masters
/// (nodes 0 .. shards-1, master i serving the i-th of `shards` equal slot ranges) and, with
/// replicas, node shards+i replicating master i. Each node is a redis_server with
/// server_mode::cluster: its nodes.conf lives in its own state directory, is kept by
/// restart_node() and removed with the fixture.
///
/// The cluster is built without redis-cli: distinct config epochs, CLUSTER ADDSLOTSRANGE,
/// CLUSTER MEET (with the bus port), CLUSTER REPLICATE, so the layout above is exact.
///
/// Every constructor and operation returns only once the cluster is *settled*: every running
/// node reports cluster_state:ok, every running node's CLUSTER NODES gives the same slot map
/// (each of the 16384 slots to one master) and the same role and master for every running
/// node, none flags a running node as failed, and every running replica's link to its master
/// is up. The constructor and move/failover operations wait at most 10 s for that (the forced
/// failover and restart_node() 20 s, since failure detection takes node_timeout and an
/// election); then they throw std::runtime_error saying what each node last reported.
/// Precondition errors (an index out of range, a node that is no master) throw
/// std::logic_error.
///
/// Nodes are addressed by index; which are masters changes with failovers (master_of_slot(),
/// replica_of(), role()). Not thread-safe: drive it from the test thread.
class cluster_member {
public:
    explicit cluster_member(cluster_member_options options = {});

    /// Every node's address, masters first: what a client is seeded with.
    [[nodiscard]] auto seeds() const -> std::vector<redlock::node_address>;
    [[nodiscard]] auto node(std::size_t i) -> redis_server& { return nodes_.at(i); }
    [[nodiscard]] auto node(std::size_t i) const -> const redis_server& { return nodes_.at(i); }
    [[nodiscard]] auto size() const noexcept -> std::size_t { return nodes_.size(); }
    /// The node's CLUSTER MYID (read once, at construction).
    [[nodiscard]] auto node_id(std::size_t i) const -> const std::string& { return ids_.at(i); }

    /// The node serving `slot` now, as the cluster (a running node's CLUSTER NODES) says.
    [[nodiscard]] auto master_of_slot(std::uint16_t slot) const -> std::size_t;
    /// The node replicating `master` now; throws std::logic_error if it has none.
    [[nodiscard]] auto replica_of(std::size_t master) const -> std::size_t;
    /// The first field of the node's ROLE: "master" or "slave".
    [[nodiscard]] auto role(std::size_t i) const -> std::string;
    /// CLUSTER KEYSLOT `key`, asked of a running node.
    [[nodiscard]] auto key_slot(const std::string& key) const -> std::uint16_t;

    /// Reshards `slot` to master `to` with the standard protocol: IMPORTING on `to`,
    /// MIGRATING on its owner, every key MIGRATEd, then SETSLOT NODE on `to`, the old owner
    /// and every other master; returns once settled. A no-op when `to` already serves it.
    void move_slot(std::uint16_t slot, std::size_t to);
    /// The first half, for ASK: IMPORTING on `to`, MIGRATING on the owner; the owner then
    /// answers -ASK for keys of the slot it no longer has, and `to` serves them after ASKING.
    void begin_move_slot(std::uint16_t slot, std::size_t to);
    /// MIGRATEs at most `count` keys of a slot being moved (begin_move_slot()) from its owner
    /// to the target; returns how many it listed: each went, or was gone when MIGRATE ran
    /// (expired or deleted since it was listed: MIGRATE answers NOKEY, which is no error).
    auto migrate_keys(std::uint16_t slot, std::size_t count) -> std::size_t;
    /// The second half: the remaining keys, then SETSLOT NODE everywhere; waits until settled.
    void finish_move_slot(std::uint16_t slot, std::size_t to);

    /// CLUSTER FAILOVER on the replica of `master` (once its link is up): a coordinated
    /// switch without data loss. Returns once settled with the replica's ROLE master and the
    /// old master replicating it.
    void manual_failover(std::size_t master);
    /// Crashes `master` and waits until its replica serves its slots. With 3 shards the
    /// surviving masters elect it (after node_timeout and an election delay: some 2-4 s);
    /// with fewer there is no majority left to vote, so the fixture sends CLUSTER FAILOVER
    /// TAKEOVER to the replica, as an operator would. The crashed node stays down.
    /// `on_promoted`, if set, is called with the replica's index as soon as its ROLE says
    /// master, before the rest of the cluster has settled: what it does to the new master comes
    /// before almost anything a client sends there (a client reads the new map only after a
    /// request to the crashed master fails).
    void forced_failover(std::size_t master,
                         const std::function<void(std::size_t)>& on_promoted = {});
    /// Starts node `i` again (crashing it first if it runs) with its kept nodes.conf: a former
    /// master that was failed over comes back as a replica of its successor. Waits until it
    /// has rejoined and the cluster is settled.
    void restart_node(std::size_t i);
    /// Waits (at most `limit`) until the cluster is settled; throws otherwise.
    void await_settled(std::chrono::milliseconds limit = std::chrono::seconds{10}) const;

    /// GET, PTTL and EXISTS of `key` on the master serving its slot now.
    [[nodiscard]] auto get(const std::string& key) const -> std::optional<std::string>;
    [[nodiscard]] auto pttl(const std::string& key) const -> long long;
    [[nodiscard]] auto exists(const std::string& key) const -> bool;

private:
    struct move {
        std::size_t from = 0;
        std::size_t to = 0;
    };
    [[nodiscard]] auto answering(std::size_t i) const -> bool;
    [[nodiscard]] auto any_answering() const -> const redis_server&;
    [[nodiscard]] auto index_of_port(std::uint16_t port) const -> std::size_t;
    [[nodiscard]] auto is_master(std::size_t i) const -> bool;
    void check_index(std::size_t i, const char* what) const;
    void create();
    /// Settled, and `also` holds (the operation's effect), within `limit`; else throws.
    void await_settled(std::chrono::milliseconds limit, const std::function<bool()>& also) const;
    void run_ok(std::size_t i, const std::vector<std::string>& argv) const;

    cluster_member_options options_;
    std::vector<redis_server> nodes_;
    std::vector<std::string> ids_;
    std::map<std::uint16_t, move> moving_;
};

/// The lock key of `resource` under the default key prefix: what a member's node stores.
[[nodiscard]] auto lock_key(const std::string& resource) -> std::string;

}  // namespace redlock_test
