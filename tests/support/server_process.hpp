#pragma once

// How redis_server starts its process and talks to it: spawning a redis-server (data server,
// cluster node or Sentinel) in its own process group, registered with the leftover-server guard,
// and the fixture's own authenticated connection to it. Internal to the support library.

#include "support/probe_connection.hpp"
#include "support/redis_server.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>

namespace redlock_test::detail {

/// `<temp>/redlock-tests`, created if missing: logs, sockets, per-server directories.
[[nodiscard]] auto work_dir() -> std::filesystem::path;
/// `<work_dir>/redis-<port>.log`, or `sentinel-<port>.log` for a Sentinel.
[[nodiscard]] auto log_path(std::uint16_t port, const server_mode& mode) -> std::filesystem::path;
[[nodiscard]] auto socket_path(std::uint16_t port) -> std::filesystem::path;
/// A fresh directory `<work_dir>/state-XXXXXX` (mkdtemp); throws std::runtime_error.
[[nodiscard]] auto make_state_dir() -> std::filesystem::path;

/// The fixture's connection to its server on `port`, TLS when the options say so;
/// nullopt with `failure` set.
[[nodiscard]] auto connect_to(std::uint16_t port, const server_options& options,
                              std::chrono::milliseconds timeout, std::string* failure)
    -> std::optional<probe_connection>;
/// AUTH [username] password on `c` when `options` carry a password. On failure, says why
/// in `failure` (the server's error text, which never contains the password).
[[nodiscard]] auto authenticate(probe_connection& c, const server_options& options,
                                std::string* failure) -> bool;

/// Where and how to start one server process.
struct spawn_request {
    std::uint16_t port = 0;
    std::uint16_t bus_port = 0;       ///< a cluster node's --cluster-port
    std::filesystem::path state_dir;  ///< empty: the shared work_dir() is its --dir
    const server_options* options = nullptr;
    const server_mode* mode = nullptr;
};

struct spawn_outcome {
    pid_t pid = -1;       ///< > 0: up and answering
    std::string failure;  ///< otherwise, why not
    bool exited = false;  ///< it started and quit (typically: a port was taken)
};

/// Starts the process and returns once it answers PING with its own pid (at most 5 s; then
/// it is killed). A Sentinel's configuration file is written to `<state_dir>/sentinel.conf`
/// first unless it is there already (Sentinel rewrites it, and a restart keeps what it learnt).
[[nodiscard]] auto spawn_server(const spawn_request& request) -> spawn_outcome;

}  // namespace redlock_test::detail
