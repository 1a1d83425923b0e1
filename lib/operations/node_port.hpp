#pragma once

// What an operation may do with one node's connection, and nothing more: the
// connection itself (transport/node_connection, libuv) has a lifecycle, a
// handshake, TLS and a subscriber role that operations have no business with.
// A non-virtual facade: one pointer, no virtual call on the hot path. The
// forwarding is in node_port.cpp, the one file here that sees quorum_member.

#include "redlock/config.hpp"
#include "redlock/diagnostics.hpp"
#include "redlock/error.hpp"
#include "sansio/clock_watch.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

class quorum_member;
class reply_sink;

class node_port {
public:
    explicit node_port(quorum_member& member) noexcept : member_{&member} {}

    /// Queues one encoded command (see encoded_command). `sink->on_reply(tag,
    /// ...)` runs exactly once, unless disowned. Returns the request's number,
    /// for disown().
    /// `slot`: the hash slot of the command's keys (a cluster member routes by it);
    /// `replicated`: a write that counts only once the member's wait_replicas have it.
    auto send(std::string_view encoded, reply_sink* sink, std::uint32_t tag, std::uint16_t slot,
              bool replicated) const -> std::uint32_t;
    /// `sink` no longer wants the reply to request `number`: true if it was
    /// still to come, and `sink` then never hears of it.
    auto disown(std::uint32_t number, const reply_sink* sink) const noexcept -> bool;
    /// A cluster or Sentinel member's topology, a line each (empty for a standalone master).
    [[nodiscard]] auto topology() const -> std::vector<std::string>;
    /// The TLS session (protocol, cipher, verified) of the connection serving
    /// `slot` now; nothing when it is plain text or not connected.
    [[nodiscard]] auto tls(std::uint16_t slot) const -> std::optional<tls_info>;
    /// A cluster or Sentinel member's node that serves `slot` now ("127.0.0.1:7712"): where
    /// a failed request went. Empty for a standalone master (its name() says it) and for a
    /// member that knows of no such node yet.
    [[nodiscard]] auto serving_name(std::uint16_t slot) const -> std::string;
    /// A request for `slot` waits on the node's first connection (or a member's first map).
    [[nodiscard]] auto settling(std::uint16_t slot) const noexcept -> bool;
    /// A lock was granted without this node: its grant failed (`why`): counted, and the
    /// first one logged (quorum_member::missed_grant).
    void missed_grant(const client_config& config, std::string_view why) const;
    /// A Sentinel member's sentinels (none for the other kinds), for `redlock check`'s own
    /// questions: how many there are, sentinel `i`'s "host:port", and `encoded` sent to
    /// sentinel `i` (its outcome to `sink`, exactly once, as send()).
    [[nodiscard]] auto sentinel_count() const noexcept -> std::size_t;
    [[nodiscard]] auto sentinel_name(std::size_t i) const -> std::string;
    auto send_to_sentinel(std::size_t i, std::string_view encoded, reply_sink* sink,
                          std::uint32_t tag) const -> std::uint32_t;
    /// How the node is named in reports and errors.
    [[nodiscard]] auto name() const noexcept -> const node_name&;
    /// Until when the node's grants do not count toward a quorum: it restarted
    /// without persisting every write, and may have forgotten locks it granted.
    /// In the past (usually the clock's epoch) when they count.
    /// For a cluster member, of the node serving `slot`; a failover puts a slot in quarantine too.
    [[nodiscard]] auto quarantined_until(std::uint16_t slot) const noexcept
        -> std::chrono::steady_clock::time_point;
    /// Why: the latest quarantine's cause ("restarted without persisting every
    /// write", "its clock stepped 60000 ms forward"), of the node serving `slot`.
    [[nodiscard]] auto quarantine_cause(std::uint16_t slot) const -> std::string;
    /// Sends TIME to the node serving `slot`, which judges its clock by the
    /// answer (a renewal does, just before its extend). Fire and forget.
    void probe_clock(std::uint16_t slot) const;
    /// The latest clock step seen on the node serving `slot`, if any.
    [[nodiscard]] auto clock_step(std::uint16_t slot) const -> std::optional<clock_step_note>;

private:
    quorum_member* member_;
};

}  // namespace redlock::detail
