#pragma once

#include "support/probe_connection.hpp"

#include <redlock/config.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace redlock_test {

/// A server that serves TLS only: `--port 0 --tls-port <port>` with these files.
struct tls_listener {
    std::string cert_file;  ///< the server's certificate and key
    std::string key_file;
    std::string ca_file;        ///< the CA that client certificates must be signed by
    bool auth_clients = false;  ///< --tls-auth-clients yes: a client certificate is required
    /// What the fixture's own connections present when asked (signed by ca_file).
    std::string client_cert_file;
    std::string client_key_file;
};

/// What makes a redis_server a Redis Cluster node.
struct cluster_node {
    /// --cluster-node-timeout: how long a node may be unreachable before it is flagged as
    /// failing (and, for a master with a replica, failed over).
    std::chrono::milliseconds node_timeout{1000};
};

/// What a redis_server may have on top of the defaults.
struct server_options {
    /// Also listen on the Unix socket `<temp>/redlock-tests/redis-<port>.sock` (mode 700),
    /// next to the TCP port.
    bool unix_socket = false;
    /// Appended to the command line as they are, e.g. {"--requirepass", "s3cret"} or
    /// {"--user", "locker", "on", ">pw2", "~*", "+@all"}.
    std::vector<std::string> extra_args;
    /// When `password` is not empty, the start-up PING and every command() first send
    /// AUTH [username] password on their connection (a server with --requirepass).
    std::string username;
    std::string password;
    /// Set: port() is a TLS port and there is no plain one; the start-up PING and
    /// command() speak TLS too (without verifying the server: see probe_connection).
    std::optional<tls_listener> tls;
};

/// What kind of server a redis_server is beyond a plain data server: a cluster node, a
/// Sentinel, or a server in a directory of its own. Separate from server_options, whose
/// fields callers list in full.
struct server_mode {
    /// Set: a Redis Cluster node: `--cluster-enabled yes`, announcing 127.0.0.1, its cluster
    /// bus on a second free loopback port (--cluster-port, see cluster_bus_port()), and its
    /// `--cluster-config-file` at `<state_dir()>/nodes-<port>.conf`. It starts knowing no
    /// other node and serving no slot: see cluster_member for a whole cluster. With TLS, add
    /// `--tls-cluster yes` to the extra arguments, or it announces port 0.
    std::optional<cluster_node> cluster;
    /// Set: a Sentinel (`redis-server <file> --sentinel`) rather than a data server, with this
    /// text as its configuration file `<state_dir()>/sentinel.conf`, which Sentinel rewrites
    /// with what it learns. Its log is `<temp>/redlock-tests/sentinel-<port>.log`. See
    /// sentinel_member for a monitored master.
    std::optional<std::string> sentinel_config;
    /// Run in a directory of its own (`--dir <state_dir()>`) rather than the directory every
    /// server shares: for a replica, whose full resynchronisation writes and reads back a
    /// dump.rdb there. Implied by `cluster` and `sentinel_config`.
    bool own_dir = false;
    /// "NAME=value" entries added to the server's environment (and replacing the test
    /// process's of the same name): e.g. LD_PRELOAD of libfaketime (clock_step_test).
    std::vector<std::string> environment;

    [[nodiscard]] static auto cluster_node_with(std::chrono::milliseconds node_timeout)
        -> server_mode {
        server_mode mode;
        mode.cluster = cluster_node{.node_timeout = node_timeout};
        return mode;
    }
    [[nodiscard]] static auto sentinel(std::string config) -> server_mode {
        server_mode mode;
        mode.sentinel_config = std::move(config);
        return mode;
    }
    [[nodiscard]] static auto own_directory() -> server_mode {
        server_mode mode;
        mode.own_dir = true;
        return mode;
    }
};

/// Options for a server that persists every write (appendonly yes, appendfsync always),
/// in an AOF directory of its own: `<tag>-<pid>-<n>`, n counting the calls.
[[nodiscard]] auto persisting_every_write(const std::string& tag) -> server_options;

/// One throwaway redis-server on 127.0.0.1: persistence off, output appended to
/// `<temp>/redlock-tests/redis-<port>.log`.
///
/// The constructor returns once the server answers PING (and reports its own pid:
/// a server of another test process on the same port does not count). It throws
/// std::runtime_error when redis-server is missing or does not come up within 5 s;
/// in a doctest case that is a loud failure, never a skip.
///
/// A cluster node, a Sentinel and a server with server_mode::own_dir get a fresh directory
/// `<temp>/redlock-tests/state-XXXXXX` on their first start (state_dir()): their --dir, and
/// where nodes.conf or sentinel.conf live. restart() keeps it, and the state files in it;
/// restart_fresh() empties it first. The destructor removes it.
///
/// The server runs in its own process group and its pid is registered, so that a
/// test process that exits, aborts or is interrupted kills it rather than leaving
/// it behind. The destructor kills (SIGKILL, frozen or not) and reaps it.
///
/// Not thread-safe: drive it from the test thread.
class redis_server {
public:
    /// Port 0 picks a free loopback port, and picks again if redis cannot bind it.
    explicit redis_server(std::uint16_t port = 0);
    /// Same, with a Unix socket, extra command-line arguments or credentials.
    explicit redis_server(server_options options, std::uint16_t port = 0);
    /// Same, as a cluster node, a Sentinel or in a directory of its own.
    redis_server(server_options options, server_mode mode, std::uint16_t port = 0);
    redis_server(redis_server&& other) noexcept;
    auto operator=(redis_server&& other) noexcept -> redis_server&;
    redis_server(const redis_server&) = delete;
    auto operator=(const redis_server&) -> redis_server& = delete;
    ~redis_server();

    /// SIGKILL and reap: the master vanishes with its keys. No-op when not running.
    void crash();
    /// Starts again on the same port, empty (no keys, no scripts); kills it first if
    /// it still runs. Returns once it answers PING; throws like the constructor.
    /// The state files stay: a cluster node comes back with its nodes.conf (its node ID,
    /// epochs and the cluster as it last saw it) and rejoins, as a rebooted node does; a
    /// Sentinel comes back with the configuration it rewrote.
    void restart();
    /// restart(), after emptying state_dir(): a cluster node comes back as a new node (a new
    /// ID, no slots, knowing no other node); a Sentinel with its original configuration.
    void restart_fresh();
    /// SIGSTOP: the socket stays open, the kernel still accepts connections and
    /// buffers requests, and nothing is answered (a hung master, a long pause).
    void freeze();
    /// SIGCONT: undoes freeze(); buffered requests are then served in order.
    void thaw();

    [[nodiscard]] auto running() const noexcept -> bool { return pid_ > 0; }
    [[nodiscard]] auto frozen() const noexcept -> bool { return frozen_; }
    [[nodiscard]] auto port() const noexcept -> std::uint16_t { return port_; }
    [[nodiscard]] auto pid() const noexcept -> pid_t { return pid_; }
    /// {"127.0.0.1", port}
    [[nodiscard]] auto address() const -> redlock::node_address;
    /// The Unix socket path; empty unless started with server_options::unix_socket.
    [[nodiscard]] auto unix_socket() const -> std::filesystem::path;
    /// {.host = "", .port = 0, .unix_path = unix_socket()}; throws std::logic_error
    /// without a Unix socket.
    [[nodiscard]] auto unix_address() const -> redlock::node_address;
    [[nodiscard]] auto options() const noexcept -> const server_options& { return options_; }
    [[nodiscard]] auto mode() const noexcept -> const server_mode& { return mode_; }
    [[nodiscard]] auto log_file() const -> std::filesystem::path;
    /// The server's own directory (see the class comment); empty when it has none.
    [[nodiscard]] auto state_dir() const -> const std::filesystem::path& { return state_dir_; }
    /// A cluster node's cluster bus port (kept across restarts); 0 for other servers.
    [[nodiscard]] auto cluster_bus_port() const noexcept -> std::uint16_t { return bus_port_; }

    /// Runs one command over a fresh TCP (or TLS) connection (2 s connect and I/O timeouts; AUTH
    /// first when the options carry a password; a failed AUTH throws) and
    /// renders the reply: string and status as they are, integer in decimal, nil as
    /// nullopt, an error as "-<text>", an array as its elements joined by '\n'.
    /// Throws std::runtime_error when the server cannot be reached, and
    /// std::logic_error when it is crashed or frozen (that would only hang).
    auto command(const std::vector<std::string>& argv) const -> std::optional<std::string>;
    /// Same as command(), with the reply as hiredis parsed it, nested arrays included
    /// (CLUSTER SLOTS, SENTINEL REPLICAS); never null (failures throw as for command()).
    auto query(const std::vector<std::string>& argv) const -> reply_ptr;
    [[nodiscard]] auto get(const std::string& key) const -> std::optional<std::string>;
    [[nodiscard]] auto exists(const std::string& key) const -> bool;
    [[nodiscard]] auto dbsize() const -> long long;
    /// Milliseconds left on `key`: -2 when it does not exist, -1 without expiry.
    [[nodiscard]] auto pttl(const std::string& key) const -> long long;

private:
    void start(bool pick_port);
    void remove_socket() noexcept;
    void remove_state_dir() noexcept;

    pid_t pid_ = -1;
    std::uint16_t port_ = 0;
    std::uint16_t bus_port_ = 0;
    std::filesystem::path state_dir_;
    bool frozen_ = false;
    server_options options_;
    server_mode mode_;
};

/// A loopback port nothing listened on a moment ago (bind 127.0.0.1:0, read, close).
/// Another process may take it before we do; redis_server retries for that reason.
[[nodiscard]] auto free_port() -> std::uint16_t;

}  // namespace redlock_test
