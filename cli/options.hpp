#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace redlock::cli {

/// Flags that every subcommand accepts, before or after its name.
struct global_options {
    /// --config; unset: $REDLOCK_CONFIG, else the search of config_search.hpp.
    std::optional<std::string> config;
    bool json = false;
    bool verbose = false;
};

/// How to acquire: shared by `run` and `acquire`.
struct lock_flags {
    std::string resource;
    std::optional<long long> ttl_ms;  ///< unset: the config's lock.ttl_ms
    long long wait_ms = 0;            ///< 0: one attempt; otherwise lock_options::max_wait
    bool fence = false;
    bool fair = false;                  ///< lock_options::wait = fair
    bool shared = false;                ///< a reader (lock_options::shared)
    std::optional<int> permits;         ///< one of a semaphore's permits (lock_options::permits)
    std::optional<std::string> holder;  ///< lock_options::holder; unset: the default
    std::optional<long long> lock_delay_ms;  ///< lock_options::lock_delay; unset: the config's
};

enum class on_lost_action { term, kill, ignore };

struct run_options {
    lock_flags lock;
    on_lost_action on_lost = on_lost_action::term;
    long long kill_after_ms = 5000;
    /// SIGTERM once the validity left falls below this (renewals failing);
    /// unset: a quarter of the TTL (run_timeline.hpp).
    std::optional<long long> term_before_ms;
    /// --pid-only: CMD stays in redlock's process group and only its pid is
    /// signalled (before 0.2.0); else CMD's own group gets every signal.
    bool pid_only = false;
    bool nonblock = false;                     ///< -n: one attempt (as --wait-ms 0)
    int conflict_exit_code = 75;               ///< -E: the exit code when the lock is not had
    std::optional<std::string> shell_command;  ///< -c: run by /bin/sh -c instead of `-- CMD`
    std::vector<std::string> command;          ///< everything after `--`, or sh -c's argv
};

/// `release` and `extend`: a lock named by its value, acquired elsewhere.
struct value_options {
    std::string resource;
    std::string value;
    long long ttl_ms = 0;        ///< extend only
    bool shared = false;         ///< the value is a reader's
    std::optional<int> permits;  ///< the value holds one of this many permits
};

/// `status`: a lock (its writer and readers), or a semaphore's permits.
struct status_options {
    std::string resource;
    std::optional<int> permits;
};

/// `check`: the nodes' health.
struct check_options {
    /// Fail (exit 1, unsafe_nodes) when a reachable node can lose acknowledged
    /// writes, as a health check.
    bool strict = false;
};

/// `break`: an audited force-release.
struct break_options {
    std::string resource;
    std::string reason;
    std::optional<std::string> breaker;  ///< unset: HOST:PID (redlock)
    std::optional<int> permits;          ///< also break a semaphore of this many permits
};

/// `audit`: a resource's breaks.
struct audit_options {
    std::string resource;
    std::size_t limit = 20;
};

/// `check-fence`: is a fencing token current?
struct fence_options {
    std::string resource;
    std::uint64_t fence = 0;
};

/// `list`: the locks on the nodes (client::list).
struct list_flags {
    std::string prefix;
    long long limit = 1000;              ///< list_options::limit
    std::optional<long long> budget_ms;  ///< list_options::budget; unset: the library's default
};

/// `elect`: run CMD while leading an election (hot standby).
struct elect_options {
    /// lock.resource is the election's name, lock.ttl_ms its TTL, lock.wait_ms
    /// its max wait (0: until interrupted); CMD and how it is ended as run's.
    run_options run;
    std::string proposal;
};

/// `leader`: who leads, and with --watch every change.
struct leader_flags {
    std::string name;
    bool watch = false;
};

enum class subcommand {
    run,
    elect,
    leader,
    acquire,
    release,
    extend,
    status,
    check,
    list,
    break_lock,
    audit,
    check_fence
};

/// Everything the command line says.
struct options {
    global_options global;
    subcommand chosen = subcommand::check;
    run_options run;
    lock_flags acquire;
    value_options release;
    value_options extend;
    status_options status;
    check_options check;
    break_options breaking;
    audit_options audit;
    fence_options fence;
    list_flags list;
    elect_options elect;
    leader_flags leader;
};

/// Declares break, audit and check-fence (operator_options.cpp).
void declare_operator_tools(CLI::App& app, options& into);
/// `run` (run_options.cpp).
void declare_run(CLI::App& app, run_options& into);
/// How CMD is ended when the lock is being lost (run and elect): --on-lost,
/// --term-before-ms, --pid-only, --kill-after-ms.
void add_end_flags(CLI::App& sub, run_options& into);
/// `elect` and `leader` (elect_options.cpp).
void declare_election(CLI::App& app, options& into);
/// Declares the flags of `run` and `acquire`; returns --wait-ms, which run's
/// -w and -n exclude.
auto add_lock_flags(CLI::App& sub, lock_flags& into) -> CLI::Option*;

/// Declares the subcommands and their flags (help texts, defaults, checks and
/// exit codes) on `app`; parsing writes into `into`, which must outlive `app`.
void declare_options(CLI::App& app, options& into);

/// What the flags of the chosen subcommand say together that each alone
/// cannot (--shared with --permits, --permits with --fence): the message of a
/// usage error naming both flags, or empty.
[[nodiscard]] auto conflicting_flags(const options& opts, subcommand chosen) -> std::string;

/// The subcommand chosen on a successfully parsed `app`.
[[nodiscard]] auto chosen_subcommand(const CLI::App& app) -> subcommand;

}  // namespace redlock::cli
