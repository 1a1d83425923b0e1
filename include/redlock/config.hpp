#pragma once

#include "redlock/export.hpp"
#include "redlock/lock.hpp"
#include "redlock/result.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// One Redis master: TCP `host:port` (the name is resolved asynchronously) or a
/// Unix socket path. Exactly one of `host` and `unix_path` is non-empty.
struct REDLOCK_API node_address {
    std::string host;
    std::uint16_t port = 6379;
    std::string unix_path;
    /// With client_config::tls set, false connects this node in plain text
    /// (a node on a trusted link, or one without a TLS port). Unix sockets
    /// never use TLS: they never leave the machine.
    bool tls = true;

    [[nodiscard]] auto is_unix() const noexcept -> bool { return !unix_path.empty(); }
    /// "host:port" or "unix:/path": the name used in every message about this node.
    [[nodiscard]] auto to_string() const -> std::string;
};

/// A string that never prints itself. Holds the password read from the
/// environment; there is deliberately no stream operator.
class secret {
public:
    secret() = default;
    explicit secret(std::string value) : value_{std::move(value)} {}
    [[nodiscard]] auto reveal() const noexcept -> const std::string& { return value_; }
    [[nodiscard]] auto empty() const noexcept -> bool { return value_.empty(); }

private:
    std::string value_;
};

/// A quorum member that is a Redis Cluster (README, "Cluster and Sentinel
/// members"). The client reads the slot map from the seeds and sends each
/// lock's commands to the master of its slot; every key of one lock shares a
/// hash tag, so one lock is one slot.
struct cluster_member {
    /// Where to ask for the slot map first (any nodes of the cluster; at least one).
    std::vector<node_address> seeds;
    /// 0: a failover's new master does not count for restart_quarantine (the
    /// quarantine rule). N > 0: a grant (and a fence counter's write, and an
    /// extend) counts only once WAIT confirms that N replicas have it; set N to
    /// the replicas per master for the guarantee (README).
    int wait_replicas = 0;
    /// The slot map is read again at least this often (and at once after a
    /// MOVED, a failed request or CLUSTERDOWN).
    std::chrono::milliseconds refresh_interval{10'000};
};

/// A quorum member that is a master managed by Redis Sentinel: the client asks
/// the sentinels where it is (SENTINEL GET-MASTER-ADDR-BY-NAME), follows
/// +switch-master, and checks on every connect that the node is a master.
struct sentinel_member {
    std::vector<node_address> sentinels;  ///< at least one
    std::string master_name;              ///< the name the sentinels monitor it under
    /// As cluster_member::wait_replicas.
    int wait_replicas = 0;
    /// The sentinels are asked again at least this often.
    std::chrono::milliseconds refresh_interval{10'000};
    /// AUTH for the sentinels themselves (a sentinel's requirepass is its own);
    /// empty password: none. The master gets client_config's credentials.
    std::string sentinel_username;
    std::string sentinel_password_env;  ///< the variable it came from (JSON)
    secret sentinel_password;
};

/// TLS to the nodes (the "tls" object of the JSON schema). Verification is on
/// by default: a node must show a certificate from a trusted CA, for the name
/// it was reached by.
struct tls_options {
    std::string ca_file;      ///< PEM CA certificates; empty: the system's trusted CAs
    std::string cert_file;    ///< PEM client certificate (with key_file), for servers
                              ///< that require one (redis --tls-auth-clients yes)
    std::string key_file;     ///< PEM private key of cert_file
    std::string server_name;  ///< the name verified (and sent as SNI); empty: each node's host
    /// Off: any certificate is accepted. Encryption without knowing who is at
    /// the other end; for tests only.
    bool verify = true;
};

enum class log_level { debug, info, warning, error };

/// Everything a client needs. Defaults match the JSON schema in the README.
struct client_config {
    /// The quorum's members: these standalone masters, then `clusters`, then
    /// `sentinel_masters`. A majority of all of them must grant a lock.
    std::vector<node_address> nodes;
    std::vector<cluster_member> clusters;
    std::vector<sentinel_member> sentinel_masters;
    /// How many members the quorum counts: every node, cluster and Sentinel-managed master.
    [[nodiscard]] auto member_count() const noexcept -> std::size_t {
        return nodes.size() + clusters.size() + sentinel_masters.size();
    }
    std::string key_prefix = "redlock:";
    /// Prefix of the fencing counters (keys that never expire). Neither prefix
    /// may start with the other, so no resource name can make a lock key and a
    /// counter key collide.
    std::string fence_prefix = "redlock-fence:";
    /// Prefix of the waiter queues (and of the wake-up channels, as
    /// "<queue_prefix>wake:<client id>").
    std::string queue_prefix = "redlock-queue:";
    std::chrono::milliseconds connect_timeout{200};
    /// Per-request deadline. Small against the TTL: a node that has not answered
    /// by then counts as failed for this attempt.
    std::chrono::milliseconds request_timeout{50};
    /// Back-pressure: at most this many acquisitions without a wait deadline
    /// run at once; more wait in the client, in order, and start as others
    /// finish. Beyond a few hundred in flight the nodes' queues only grow,
    /// and a request's deadline would measure the queue in front of it
    /// instead of the node. 0: no limit. Acquisitions given a max_wait are
    /// not held back (they may wait for a holder for a long time).
    int max_concurrent_acquisitions = 256;
    /// drift = ceil(ttl * clock_drift_factor) + clock_drift_floor
    double clock_drift_factor = 0.01;
    std::chrono::milliseconds clock_drift_floor{2};

    struct lock_defaults {
        std::chrono::milliseconds ttl{10'000};
        /// A quorum whose validity is below this is not a lock (it is released).
        std::chrono::milliseconds min_validity{1};
        bool auto_renew = false;
        /// Auto-renewal extends when this fraction of the TTL has passed since
        /// the last successful acquire/extend.
        double renew_fraction = 1.0 / 3.0;
        bool fencing = false;
        /// Default wait mode: "targeted", "fair", "broadcast" or "poll".
        redlock::wait_mode wait = redlock::wait_mode::targeted;
        /// A waiter's queue entry expires unless it comes back within this
        /// long, so a dead waiter blocks nobody; waiters therefore re-check at
        /// least every half of it.
        std::chrono::milliseconds waiter_ttl{2000};
        /// Lock-delay (Chubby's): the nodes keep a lock this long past its TTL,
        /// and renewals keep it on top. The holder's validity does not include
        /// it, and a clean release still deletes the lock at once; so only a
        /// holder that crashed or was cut off blocks the resource for the
        /// delay too, which gives a holder that lost its lock (a paused or
        /// partitioned process) time to notice before anyone else is granted
        /// it. 0: off. README, "Lock-delay".
        std::chrono::milliseconds lock_delay{0};
    } lock;

    struct retry_policy {
        int attempts = 3;  ///< total attempts, the first included
        std::chrono::milliseconds delay{200};
        std::chrono::milliseconds jitter{100};  ///< uniform extra delay in [0, jitter]
    } retry;

    /// A node that comes back with a new run_id (it restarted) and does not
    /// persist every write (appendonly yes + appendfsync always) may have
    /// forgotten locks it granted. Its grants are then not counted for this
    /// long: the delayed-restart rule (README, Safety), enforced by the client even when
    /// operators forget it. Unset: lock.ttl. Zero: off.
    std::optional<std::chrono::milliseconds> restart_quarantine;

    struct reconnect_policy {
        std::chrono::milliseconds min_delay{50};  ///< first back-off; doubles up to max_delay
        std::chrono::milliseconds max_delay{2000};
    } reconnect;

    std::string username;      ///< ACL user for AUTH; empty: AUTH with the password only
    std::string password_env;  ///< name of the variable the password came from
    secret password;           ///< empty: no AUTH

    /// Set: every TCP node (unless its node_address::tls is false) is reached
    /// over TLS, the TLS handshake counted in connect_timeout. Unset: plain TCP.
    std::optional<tls_options> tls;

    /// Where the library's warnings go (an even node count, a node that cannot
    /// be reached, a restart or clock step, a topology change: README,
    /// "Logging"). One line per call, starting with "redlock: ", on the loop
    /// thread; keep it short. Empty: each line goes to stderr. To silence the
    /// library, set one that does nothing.
    std::function<void(log_level, std::string_view)> logger;
};

/// A configuration problem, located: the file, the JSON pointer of the field
/// ("/nodes/1/port"; empty for the document itself) and what is wrong.
struct REDLOCK_API config_error {
    std::string file;
    std::string field;
    std::string message;

    /// "configs/x.json: /nodes/1/port: must be an integer in 1..65535"
    [[nodiscard]] auto what() const -> std::string;
};

/// The same text as config_error::what(), for symmetry with to_string(error).
[[nodiscard]] REDLOCK_API auto to_string(const config_error& e) -> std::string;
/// Writes to_string(e): `std::cout << err` prints any error the library returns.
REDLOCK_API auto operator<<(std::ostream& os, const config_error& e) -> std::ostream&;

/// Reads and validates a JSON configuration file. Unknown fields, wrong types,
/// out-of-range values and a missing password variable are errors. Relative
/// paths in it (tls.ca_file, tls.cert_file, tls.key_file) are relative to the
/// file's directory, not to the working directory.
[[nodiscard]] REDLOCK_API auto load_config(const std::filesystem::path& file)
    -> result<client_config, config_error>;

/// Same as load_config on text already in memory; `source` names it in errors.
/// Relative paths stay relative to the working directory.
[[nodiscard]] REDLOCK_API auto parse_config(std::string_view json_text,
                                            std::string_view source = "<config>")
    -> result<client_config, config_error>;

/// The semantic checks load_config applies, for configurations built in code.
/// client::create runs it too. Field names are the JSON pointers of the schema.
[[nodiscard]] REDLOCK_API auto validate_config(const client_config& config,
                                               std::string_view source = "<config>")
    -> std::optional<config_error>;

}  // namespace redlock
