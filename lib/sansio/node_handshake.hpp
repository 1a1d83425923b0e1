#pragma once

#include "redlock/config.hpp"
#include "sansio/request_fifo.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// What a connection says to a node before any lock command, and what it
/// learns from the answers. No I/O: the connection writes the commands this
/// builds and feeds it the replies, and it says when the handshake is over.
///
/// A lock connection's handshake is lean, because a CLI process pays it on
/// every node for a single lock. The first round is AUTH (with a password),
/// one SCRIPT EXISTS naming every script, and one INFO of the server, persistence,
/// replication and cluster sections: who the node is (run_id), whether it persists
/// writes, that it is a master of the expected kind (standalone or cluster), so a restart is known
/// before a grant is counted. A second round follows only when the answers call for it: SCRIPT LOAD
/// of the scripts the node lacks (a restarted node has them before any EVALSHA reaches it), CONFIG
/// GET appendfsync when AOF is on (only then can the node persist every write),
/// and a plain INFO when the two-section INFO failed or came back without
/// run_id or aof_enabled (Redis before 7 takes one section only), and TIME when
/// INFO did not hold the node's clock (server_time_usec, read from Redis 7 on):
/// node_trust compares that clock with the local monotonic clock across handshakes
/// and renewals (a step quarantines the node). Usually the handshake is two
/// commands, sent in one write, and one round trip.
///
/// A subscriber sends AUTH and SUBSCRIBE.
class node_handshake {
public:
    enum class verdict : std::uint8_t { pending, done, failed };

    struct step {
        verdict result = verdict::pending;
        std::string cause;    ///< why, when failed
        std::string warning;  ///< a line to log, or empty
        /// The second round, when this reply completed the first and the node
        /// needs more: commands to write before anything else still queued,
        /// and one tag per command, in order.
        std::string send;
        std::vector<std::uint32_t> tags;
    };

    /// Appends the first round's commands to `out` and one request per command
    /// (with `sink`, `deadline`) to `requests`. Starts a new handshake: replies
    /// of an earlier one are ignored from now on.
    void begin(const client_config& config, std::string_view channel, std::string& out,
               std::deque<request_fifo::request>& requests, reply_sink* sink,
               std::uint64_t deadline);

    /// One handshake reply, in order. `tag` is the one given with its command.
    auto on_reply(std::uint32_t tag, const reply_event& event) -> step;

    /// Who is at the other end: a standalone master (a standalone or
    /// Sentinel-managed member's), a node of a cluster member (refused unless in
    /// cluster mode, and the reverse), or a sentinel (AUTH and PING only: it is
    /// asked questions, never given locks). Set before begin().
    enum class peer : std::uint8_t { standalone, cluster_node, sentinel };
    void expect(peer p) noexcept { peer_ = p; }

    /// Subscriber: its SUBSCRIBE was confirmed.
    [[nodiscard]] auto subscribed() const noexcept -> bool { return subscribed_; }
    /// The run_id the node reported at the last complete handshake (may be empty).
    [[nodiscard]] auto run_id() const noexcept -> const std::string& { return run_id_; }
    /// The node's clock in the current handshake (INFO's server_time_usec, or TIME's
    /// answer), in microseconds since the Unix epoch; none if it told neither (TIME
    /// renamed away, or not Redis).
    [[nodiscard]] auto node_time() const noexcept -> std::optional<std::int64_t> {
        return node_time_;
    }

    /// After a complete handshake: the node restarted since the previous one
    /// (a new run_id), and how long its grants must not count (0: at once).
    struct restart {
        bool restarted = false;
        std::chrono::milliseconds quarantine{0};
        std::string warning;
    };
    /// Decides, once per complete handshake, what a restart means.
    auto settle_identity(const client_config& config) -> restart;

    static constexpr std::uint32_t auth_tag = 1;
    static constexpr std::uint32_t script_exists_tag = 2;
    static constexpr std::uint32_t info_tag = 3;  ///< INFO server persistence replication cluster
    static constexpr std::uint32_t script_load_tag = 4;
    static constexpr std::uint32_t info_all_tag = 5;  ///< plain INFO, the fallback
    static constexpr std::uint32_t config_fsync_tag = 6;
    static constexpr std::uint32_t subscribe_tag = 7;
    static constexpr std::uint32_t ping_tag = 8;
    static constexpr std::uint32_t time_tag = 9;

private:
    auto answer(std::uint32_t tag, const reply* r) -> step;  // a reply that arrived
    void scripts_reply(const reply* r, step& s);
    /// INFO's server_time_usec as this handshake's clock sample, from Redis 7 and later.
    void node_time_from_info(std::string_view text);
    void info_reply(std::uint32_t tag, const reply* r, step& s);
    /// Fails `s` for a replica, or a node of the wrong mode (cluster or not).
    auto check_role(std::string_view text, step& s) -> bool;
    void second_round(step& s);
    void fail(step& s, std::string cause);

    std::size_t replies_left_ = 0;  ///< of the current round; 0: no handshake going on
    std::string_view password_;     ///< the config's (it outlives the connection), or empty
    bool first_round_ = true;
    bool subscriber_ = false;
    bool subscribed_ = false;
    peer peer_ = peer::standalone;
    bool identity_warned_ = false;  ///< said once per connection, not at each reconnect
    std::vector<bool> missing_;     ///< per all_scripts(): the node lacks it
    bool info_fallback_ = false;    ///< the two-section INFO did not tell us enough
    std::string run_id_;
    std::string new_run_id_;
    bool aof_ = false;
    std::string appendfsync_;
    std::optional<std::int64_t> node_time_;
};

/// `field:value` from the text of an INFO reply; empty when absent.
[[nodiscard]] auto info_field(std::string_view text, std::string_view field) -> std::string_view;

/// Whether `field` appears in the text of an INFO reply (even with an empty value).
[[nodiscard]] auto has_info_field(std::string_view text, std::string_view field) -> bool;

}  // namespace redlock::detail
