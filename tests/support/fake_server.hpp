#pragma once

#include <redlock/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace redlock_test {

/// One command as a fake server received it: the elements of the RESP array.
using fake_command = std::vector<std::string>;

/// What a fake server sends in answer to one command (or on accepting a connection).
struct fake_answer {
    std::string bytes;       ///< sent as they are: RESP or not; may be empty (no answer)
    std::size_t filler = 0;  ///< then this many 'x' bytes, generated while sending
    bool trickle = false;    ///< one byte per fake_server::behaviour::byte_interval
    bool close = false;      ///< then close the connection (FIN, never RST): a reply cut short
};

/// RESP encodings, for building answers.
namespace resp {
[[nodiscard]] auto status(std::string_view text) -> std::string;
[[nodiscard]] auto error(std::string_view text) -> std::string;
[[nodiscard]] auto bulk(std::string_view text) -> std::string;
[[nodiscard]] auto nil() -> std::string;
[[nodiscard]] auto integer(long long value) -> std::string;
/// An array of already encoded elements.
[[nodiscard]] auto array(std::initializer_list<std::string> elements) -> std::string;
}  // namespace resp

/// A misbehaving Redis on 127.0.0.1: a TCP listener on a free port served by its own
/// thread (plain sockets and poll()), whose behaviour decides the answer to every command.
/// Answers leave in order on each connection, like a real server's, and one that trickles
/// holds back those queued behind it.
///
/// Commands are parsed with hiredis's reader and recorded, so a test can await what the
/// client sent (the handshake, a SET) instead of sleeping.
///
/// The destructor stops the thread and closes every socket. Thread-safe accessors.
class fake_server {
public:
    using handler = std::function<fake_answer(const fake_command&)>;

    struct behaviour {
        /// The answer to each command. Empty: no answer at all (a silent server).
        handler on_command;
        /// Sent as soon as a connection is accepted, before any command arrives.
        std::optional<fake_answer> on_accept;
        /// The pace of answers marked `trickle`.
        std::chrono::milliseconds byte_interval{1000};
    };

    explicit fake_server(behaviour how);
    fake_server(const fake_server&) = delete;
    auto operator=(const fake_server&) -> fake_server& = delete;
    ~fake_server();

    [[nodiscard]] auto port() const noexcept -> std::uint16_t { return port_; }
    /// {"127.0.0.1", port}
    [[nodiscard]] auto address() const -> redlock::node_address;

    /// Every command received so far, all connections, in arrival order.
    [[nodiscard]] auto commands() const -> std::vector<fake_command>;
    /// How many commands named `name` (case-insensitive) arrived so far.
    [[nodiscard]] auto received(std::string_view name) const -> std::size_t;
    /// Connections accepted so far.
    [[nodiscard]] auto connections() const -> std::size_t;
    /// Connections the client closed (or reset) so far.
    [[nodiscard]] auto closed_by_client() const -> std::size_t;
    /// Bytes handed to the kernel so far, all connections.
    [[nodiscard]] auto bytes_sent() const -> std::size_t;

    /// A plausible answer to what node_connection sends on every (re)connect and what
    /// client::check() asks: AUTH, PING, SCRIPT EXISTS (all there), SCRIPT LOAD, INFO (any
    /// sections), CONFIG GET appendfsync, ROLE.
    /// nullopt for any other command. The run_id is fixed per call site (`run_id`).
    [[nodiscard]] static auto handshake_answer(
        const fake_command& command,
        std::string_view run_id = "fa4efa4efa4efa4efa4efa4efa4efa4efa4efa4e")
        -> std::optional<fake_answer>;
    /// A handler that answers the handshake plausibly and everything else with `rest`.
    [[nodiscard]] static auto after_handshake(handler rest) -> handler;

private:
    struct state;
    void run();

    std::unique_ptr<state> state_;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

/// True when `command` is named `name`, ignoring case.
[[nodiscard]] auto is_command(const fake_command& command, std::string_view name) -> bool;

}  // namespace redlock_test
