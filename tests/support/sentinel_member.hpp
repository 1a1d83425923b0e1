#pragma once

#include "support/redis_server.hpp"

#include <redlock/config.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace redlock_test {

struct sentinel_member_options {
    std::string master_name = "redlock-m";
    /// What both data servers get on top (extra arguments, credentials). With a password they
    /// also get --masterauth (and --masteruser), and the Sentinels `sentinel auth-pass` (and
    /// auth-user); the Sentinels themselves need no password. With TLS the servers replicate
    /// over TLS (--tls-replication), and the Sentinels listen on TLS only with the same
    /// certificates and speak TLS to the servers and to each other; everyone presents the
    /// listener's client certificate (if any) on the connections it opens.
    server_options server;
};

/// One Sentinel-managed master, as one quorum member of a Redlock: two data servers, server 0
/// the master and server 1 its replica (`--replicaof`), each in a directory of its own, and
/// three Sentinels (redis_server in server_mode::sentinel: own process group, pid registered
/// with the leftover-server guard, log `<temp>/redlock-tests/sentinel-<port>.log`, their
/// rewritable sentinel.conf in their state directory). The Sentinels monitor the master as
/// master_name() with quorum 2, down-after-milliseconds 1000, failover-timeout 3000 and
/// parallel-syncs 1, and know every address as 127.0.0.1 (announce-ip, no host names).
///
/// Every constructor and operation returns only once the member is *settled* around the
/// expected master: every running Sentinel gives its address for master_name(), flags it
/// plainly "master" (no failover in progress, not down), knows the other running Sentinels
/// and the running replica (flags plainly "slave"); the master's ROLE is master, and the
/// running replica replicates it with its link up. The constructor and failover() wait at
/// most 15 s for that, kill_master() and restart_server() 20 s (failure detection takes the
/// 1 s down-after period, agreement and an election); then they throw std::runtime_error
/// saying what each Sentinel and server last reported. std::logic_error for misuse (an index
/// out of range, a failover without a running replica).
///
/// Sentinel itself reconfigures a former master that comes back only some 8 s after it
/// reports the wrong role; failover() and restart_server() send it the REPLICAOF that
/// Sentinel would send, so that the member settles within a test's time. A Sentinel does not
/// start another automatic failover of the same master within 2 x failover-timeout (6 s) of
/// the last one, so a kill_master() soon after a failover() waits that long.
///
/// Not thread-safe: drive it from the test thread.
class sentinel_member {
public:
    explicit sentinel_member(sentinel_member_options options = {});

    /// The three Sentinels' addresses: what a client is configured with.
    [[nodiscard]] auto sentinels() const -> std::vector<redlock::node_address>;
    [[nodiscard]] auto master_name() const -> const std::string& { return options_.master_name; }
    /// Which server (0 or 1) is the master, as SENTINEL GET-MASTER-ADDR-BY-NAME on the first
    /// running Sentinel says now.
    [[nodiscard]] auto master_index() const -> std::size_t;
    /// Data server 0 or 1.
    [[nodiscard]] auto server(std::size_t i) -> redis_server& { return servers_.at(i); }
    [[nodiscard]] auto server(std::size_t i) const -> const redis_server& { return servers_.at(i); }
    /// Sentinel 0, 1 or 2; its command() and query() run Sentinel commands.
    [[nodiscard]] auto sentinel(std::size_t i) -> redis_server& { return sentinels_.at(i); }
    [[nodiscard]] auto sentinel(std::size_t i) const -> const redis_server& {
        return sentinels_.at(i);
    }

    /// SENTINEL FAILOVER (retried while a Sentinel answers -NOGOODSLAVE or -INPROG); returns
    /// once every Sentinel names the other server as master, its ROLE is master, and the old
    /// master replicates it.
    void failover();
    /// Crashes the master and returns once the Sentinels have promoted the replica (an
    /// automatic failover: some 2-5 s). The crashed server stays down.
    void kill_master();
    /// Starts server `i` again, empty (crashing it first if it runs); unless it is the master,
    /// makes it a replica of the master and waits until the member is settled.
    void restart_server(std::size_t i);
    /// Waits (at most `limit`) until the member is settled around master_index(); throws
    /// otherwise.
    void await_settled(std::chrono::milliseconds limit = std::chrono::seconds{15}) const;

private:
    /// Empty when settled around server `master`; else the first reason it is not.
    [[nodiscard]] auto unsettled_reason(std::size_t master) const -> std::string;
    [[nodiscard]] auto describe() const -> std::string;
    void await_settled(std::size_t master, std::chrono::milliseconds limit) const;
    void demote(std::size_t i, std::size_t master) const;
    [[nodiscard]] auto index_of_port(std::uint16_t port) const -> std::size_t;

    sentinel_member_options options_;
    std::vector<redis_server> servers_;
    std::vector<redis_server> sentinels_;
};

}  // namespace redlock_test
