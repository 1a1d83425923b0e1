#pragma once

#include <redlock/config.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace redlock_test {

/// A TCP proxy on 127.0.0.1 that forwards every connection it accepts to a target
/// port, and injects network faults on demand: latency, dropped connections and a
/// blackhole. It runs on its own thread with its own libuv loop; every member may be
/// called from any thread, and each control has taken effect when it returns.
///
/// Each accepted connection gets its own upstream connection to the target. When one
/// side closes in order (FIN), what it sent before is still delivered, after the
/// latency and once healed, as TCP would; then both sides are closed. A reset or an
/// error closes both at once. Either way a client never finds itself talking, on one
/// connection, to a target that restarted behind the proxy. Connections are independent:
/// what one delivers late may arrive after what a newer one delivered.
///
/// Faults:
/// - latency: every chunk read from either side is written to the other side no
///   sooner than `per_direction` after it was read, in order; a request/reply round
///   trip therefore takes at least twice as long.
/// - drop_connections(): closes both sides of every open connection at once (the
///   clients see EOF, or a reset with drop_mode::reset). New connections are accepted.
/// - blackhole(): stops forwarding in both directions but keeps every socket open,
///   like a network that silently loses packets. The proxy stops reading, so bytes
///   wait in the kernel's buffers (and chunks already read wait in the proxy); new
///   connections are accepted but nothing is forwarded. heal() delivers what waited,
///   in order, as TCP would after a partition ends (if the peers are still there).
/// - heal(): no latency, no blackhole.
///
/// The destructor closes everything and joins the thread. Throws std::runtime_error
/// from the constructor if it cannot listen.
class fault_proxy {
public:
    enum class drop_mode { close, reset };

    struct counters {
        std::uint64_t accepted = 0;          ///< connections accepted so far
        std::uint64_t dropped = 0;           ///< connections closed by drop_connections()
        std::uint64_t open = 0;              ///< connections open now
        std::uint64_t bytes_to_target = 0;   ///< bytes written to the target
        std::uint64_t bytes_to_clients = 0;  ///< bytes written back to the clients
    };

    explicit fault_proxy(std::uint16_t target_port, std::string target_host = "127.0.0.1");
    fault_proxy(const fault_proxy&) = delete;
    auto operator=(const fault_proxy&) -> fault_proxy& = delete;
    fault_proxy(fault_proxy&&) noexcept;
    auto operator=(fault_proxy&&) noexcept -> fault_proxy&;
    ~fault_proxy();

    /// The port the proxy listens on (127.0.0.1).
    [[nodiscard]] auto port() const noexcept -> std::uint16_t;
    /// {"127.0.0.1", port()}: what a client config should name instead of the target.
    [[nodiscard]] auto address() const -> redlock::node_address;
    [[nodiscard]] auto target_port() const noexcept -> std::uint16_t;

    /// Delays every chunk, in both directions, by `per_direction` (0: none).
    void set_latency(std::chrono::milliseconds per_direction);
    /// Closes both sides of every open connection now.
    void drop_connections(drop_mode mode = drop_mode::close);
    /// Stops forwarding in both directions; sockets stay open.
    void blackhole();
    /// Latency 0 and no blackhole; whatever waited is forwarded.
    void heal();

    [[nodiscard]] auto latency() const -> std::chrono::milliseconds;
    [[nodiscard]] auto blackholed() const -> bool;
    [[nodiscard]] auto stats() const -> counters;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace redlock_test
