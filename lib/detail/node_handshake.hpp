#pragma once

#include "detail/request_fifo.hpp"
#include "redlock/config.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// What a connection says to a node before any lock command, and what it
/// learns from the answers. No I/O: the connection writes the commands this
/// builds and feeds it the replies, and it says when the handshake is over.
///
/// A lock connection sends AUTH (with a password), SCRIPT LOAD of every script
/// (a restarted node has them before any EVALSHA reaches it), then INFO server,
/// INFO persistence and CONFIG GET appendfsync: who the node is and whether it
/// persists every write, so a restart is known before a grant is counted. A
/// subscriber sends AUTH and SUBSCRIBE.
class node_handshake {
public:
    enum class verdict : std::uint8_t { pending, done, failed };

    struct step {
        verdict result = verdict::pending;
        std::string cause;    ///< why, when failed
        std::string warning;  ///< a line to log, or empty
    };

    /// Appends the handshake's commands to `out` and one request per command
    /// (with `sink`, `deadline`) to `requests`. Starts a new handshake.
    void begin(const client_config& config, std::string_view channel, std::string& out,
               std::deque<request_fifo::request>& requests, reply_sink* sink,
               std::uint64_t deadline);

    /// One handshake reply, in order. `tag` is the one given in begin().
    auto on_reply(std::uint32_t tag, const reply_event& event) -> step;

    /// Subscriber: its SUBSCRIBE was confirmed.
    [[nodiscard]] auto subscribed() const noexcept -> bool { return subscribed_; }
    /// The run_id the node reported at the last complete handshake (may be empty).
    [[nodiscard]] auto run_id() const noexcept -> const std::string& { return run_id_; }

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
    static constexpr std::uint32_t script_load_tag = 2;
    static constexpr std::uint32_t info_server_tag = 3;
    static constexpr std::uint32_t info_persistence_tag = 4;
    static constexpr std::uint32_t config_fsync_tag = 5;
    static constexpr std::uint32_t subscribe_tag = 6;

private:
    auto identity_reply(std::uint32_t tag, const reply_event& event) -> step;

    std::size_t replies_left_ = 0;
    bool subscribed_ = false;
    bool identity_warned_ = false;
    std::string run_id_;
    std::string new_run_id_;
    bool aof_ = false;
    std::string appendfsync_;
};

/// `field:value` from the text of an INFO reply; empty when absent.
[[nodiscard]] auto info_field(std::string_view text, std::string_view field) -> std::string_view;

}  // namespace redlock::detail
