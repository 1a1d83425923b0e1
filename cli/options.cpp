#include "options.hpp"

#include "option_texts.hpp"

#include <redlock/lock.hpp>

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <system_error>

namespace redlock::cli {
namespace {

void add_shared_flag(CLI::App& sub, bool& into, const char* help) {
    sub.add_flag("--shared", into, help);
}

void add_value_kind_flags(CLI::App& sub, value_options& into) {
    add_shared_flag(sub, into.shared, "The value is a reader's (acquired with --shared)");
    add_permits_option(sub, into.permits,
                       "The value holds a permit of a semaphore of K permits (acquired with "
                       "--permits K); the permit is found on each node by the value");
}

void declare_acquire(CLI::App& app, lock_flags& into) {
    auto* acquire = app.add_subcommand(
        "acquire",
        "Acquire a lock and exit, leaving it held until its TTL ends or `release` is run with "
        "its value. Prints the value alone on stdout (easy to capture: v=$(redlock acquire "
        "...)) and the details on stderr; with --json: {\"resource\", \"value\", "
        "\"validity_ms\", \"fence\", \"kind\" (exclusive, shared or permit), \"permit\" "
        "(the index held, with --permits), \"permits\"}");
    add_lock_flags(*acquire, into);
    acquire->footer(std::string{global_help} + R"(

Exit codes:
  0   acquired
  75  the lock could not be had within --wait-ms
  69  a quorum of nodes is unreachable)" +
                    common_exit_codes);
}

void declare_release(CLI::App& app, value_options& into) {
    auto* release = app.add_subcommand(
        "release",
        "Release a lock by its value (compare-and-delete on every node). Prints how many nodes "
        "deleted it; with --json: {\"released\": n, \"pending\": n, \"kind\", \"nodes\": "
        "[{\"node\", \"status\", \"detail\"}]}. A reader's value needs --shared, a permit's "
        "--permits K");
    release->add_option("-r,--resource", into.resource, "Name of the lock")
        ->required()
        ->check(non_empty);
    release->add_option("--value", into.value, "The value `acquire` printed")
        ->required()
        ->check(non_empty);
    add_value_kind_flags(*release, into);
    release->footer(std::string{global_help} + R"(

Exit codes:
  0   a majority of nodes deleted the key
  1   fewer did (not_held: the lock had expired, or the value is not the holder's;
      a value held as a reader or a permit is told the flag to add)

A value that no longer holds the lock is a failure (exit 1, error code
not_held), although the library's release() succeeds then with deleted = 0:
the library reports what the nodes did, the CLI whether the lock was released.
With --json every failure is one error object, with no result fields beside it:
{"error": {"code", "message", "nodes", "released", "pending", "kind"}}.
  69  a quorum of nodes is unreachable)" +
                    common_exit_codes);
}

void declare_extend(CLI::App& app, value_options& into) {
    auto* extend = app.add_subcommand(
        "extend",
        "Extend a lock held by its value to a new TTL on every node where it still holds that "
        "value. Never shortens it: a TTL longer than --ttl-ms is kept. Prints the validity "
        "the lock really has: the least TTL left that the confirming majority of nodes report "
        "(which may exceed --ttl-ms), less the time the extend took and clock drift; with "
        "--json: {\"validity_ms\": n, \"kind\"}. A reader's value needs --shared, a "
        "permit's --permits K");
    extend->add_option("-r,--resource", into.resource, "Name of the lock")
        ->required()
        ->check(non_empty);
    extend->add_option("--value", into.value, "The value `acquire` printed")
        ->required()
        ->check(non_empty);
    extend->add_option("--ttl-ms", into.ttl_ms, "New TTL in milliseconds")
        ->required()
        ->check(CLI::Range(1LL, max_ms));
    add_value_kind_flags(*extend, into);
    extend->footer(std::string{global_help} + R"(

Exit codes:
  0   extended on a majority
  1   not_held: a majority no longer hold this value (a value held as a reader or
      a permit is told the flag to add)
  69  a quorum of nodes is unreachable)" +
                   common_exit_codes);
}

void declare_status(CLI::App& app, status_options& into) {
    auto* status = app.add_subcommand(
        "status",
        "Show every node's view of a lock: reachable, holder (writer) value, remaining TTL, "
        "fencing counter, live readers with their TTLs; and the holder or the readers a "
        "majority agree on, if any. With --permits K, a semaphore's permits instead: per "
        "permit, the holder a majority agree on and each node's view. Without --permits, a "
        "resource no writer or reader holds that the nodes keep as a semaphore of K permits "
        "is shown as with --permits K. Read-only");
    status->add_option("-r,--resource", into.resource, "Name of the lock")
        ->required()
        ->check(non_empty);
    add_permits_option(*status, into.permits,
                       "Show the permit holders of a semaphore of K permits (the K its users "
                       "name with --permits)");
    status->footer(std::string{global_help} + R"(

Exit codes:
  0   a quorum of nodes answered (whether or not anyone holds the lock)
  69  fewer than a quorum answered)" +
                   common_exit_codes);
}

void declare_check(CLI::App& app, check_options& into) {
    auto* check = app.add_subcommand(
        "check",
        "Check every node: reachable, round-trip time, Redis version, role, whether it can "
        "lose acknowledged writes on a crash (it needs appendonly yes + appendfsync always), and "
        "its TLS: the protocol version, the cipher and whether its certificate was verified, or "
        "TLS off. A cluster member: every master of its slot map (up or DOWN, its slots, its "
        "replicas), cluster_state and the slots no master serves; a Sentinel member: its "
        "master, its replicas, what each sentinel says and how long ago the master took its "
        "role. Warns about nodes that can lose writes, replicas, members that cannot take every "
        "lock, and replicas without wait_replicas");
    check->add_flag("--strict", into.strict,
                    "A health check: fail (exit 1, error code unsafe_nodes) when a reachable "
                    "node (any master of a cluster or Sentinel member) can lose acknowledged "
                    "writes on a crash, instead of only warning");
    check->footer(std::string{global_help} + R"(

Exit codes:
  0   a quorum of nodes can take every lock (warnings do not change this without --strict)
  1   --strict: a reachable node can lose acknowledged writes (unsafe_nodes)
  69  fewer than a quorum of nodes can take every lock: unreachable, or a cluster or
      Sentinel member that answers but cannot (a master down, cluster_state:fail)
  78  a member can never grant a lock as configured: a seed not in cluster mode, a
      master name no sentinel knows, wait_replicas above a master's replicas
      (invalid_config); two nodes are one server (duplicate_server))" +
                  common_exit_codes);
}

void declare_list(CLI::App& app, list_flags& into) {
    auto* list = app.add_subcommand(
        "list",
        "List the locks a majority of nodes hold: resource, kind (writer, reader, permit), "
        "holder, time left, fencing counter and how many nodes agree; then, apart, what fewer "
        "than a quorum hold (leftovers that expire by their TTL). Walks each node's keys with "
        "SCAN, bounded by --limit and a time budget, and says when it was cut short. Read-only");
    list->add_option("--prefix", into.prefix,
                     "Only resources that begin with this (as listed: orders:42, not its key's "
                     "{orders:42})")
        ->type_name("P");
    list->add_option("--limit", into.limit, "The most lock keys read on each node")
        ->type_name("N")
        ->capture_default_str()
        ->check(CLI::Range(1LL, 100000000LL));
    list->add_option("--budget-ms", into.budget_ms,
                     "Start no new SCAN round after this long (default: 20 request timeouts, at "
                     "least 1000)")
        ->type_name("MS")
        ->check(CLI::Range(1LL, max_ms));
    list->footer(std::string{global_help} + R"(

Exit codes:
  0   a quorum of nodes answered (a listing cut short says so on stderr, and
      "complete": false in JSON)
  69  fewer than a quorum answered)" +
                 common_exit_codes);
}

}  // namespace

/// Declares the flags of `run` and `acquire`; returns --wait-ms, which run's
/// -w and -n exclude.
auto add_lock_flags(CLI::App& sub, lock_flags& into) -> CLI::Option* {
    sub.add_option("-r,--resource", into.resource, "Name of the lock")
        ->required()
        ->check(non_empty);
    sub.add_option("--ttl-ms", into.ttl_ms,
                   "Lock TTL in milliseconds (default: the config's lock.ttl_ms, 10000 unless "
                   "set)")
        ->check(CLI::Range(1LL, max_ms));
    auto* wait_ms =
        sub.add_option("--wait-ms", into.wait_ms,
                       "How long to wait for a lock someone else holds, in milliseconds; 0 makes a "
                       "single attempt. The library does the waiting (lock_options::max_wait)")
            ->capture_default_str()
            ->check(CLI::Range(0LL, max_ms));
    sub.add_flag("--fence", into.fence,
                 "Also obtain a fencing token (default: the config's lock.fencing, false unless "
                 "set)");
    sub.add_flag("--fair", into.fair,
                 "Strict arrival-order grants while waiting: a newcomer does not overtake a "
                 "live waiter queued ahead of it (the library's fair wait mode)");
    add_shared_flag(
        sub, into.shared,
        "Take a reader's (shared) lock: any number of readers hold together while no writer "
        "does. Without it the lock is exclusive: a writer, excluding readers and other "
        "writers. A queued writer stops new readers. With --fence a reader gets the current "
        "token (the last writer's), not a new one");
    add_permits_option(sub, into.permits,
                       "Take one of K permits of a counting semaphore (K from 1 to 1024): at "
                       "most K holders at once. Everyone using the resource must name the same "
                       "K. Not with --shared or --fence");
    sub.add_option("--holder", into.holder,
                   "Who holds the lock, for people: stored with it on every node and shown by "
                   "status and in a rival's 'held by' message (default: HOST:PID (PROGRAM), "
                   "where run names CMD as the program)")
        ->type_name("TEXT");
    sub.add_option("--lock-delay-ms", into.lock_delay_ms,
                   "Lock-delay: the nodes keep the lock this long past its TTL unless it is "
                   "released, so a holder that crashed or was cut off blocks the resource that "
                   "much longer (default: the config's lock.lock_delay_ms, 0 unless set)")
        ->check(CLI::Range(0LL, max_ms));
    return wait_ms;
}

void declare_options(CLI::App& app, options& into) {
    // Before the subcommands: they inherit it, so that global flags may follow them.
    app.fallthrough();
    app.require_subcommand(1);
    app.add_option("-c,--config", into.global.config,
                   "Config file (JSON) naming the quorum members. Default: $REDLOCK_CONFIG, "
                   "else the first that "
                   "exists of ./redlock.json, $XDG_CONFIG_HOME/redlock/config.json (default "
                   "~/.config/redlock/config.json), /etc/redlock/config.json; --verbose says "
                   "which")
        ->type_name("FILE")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a wrapper's default yields
    app.add_flag("--json", into.global.json,
                 "Machine-readable output: exactly one JSON object on stdout, errors included "
                 "({\"error\": {\"code\", \"message\"}})");
    app.add_flag("-v,--verbose", into.global.verbose, "Per-node details on stderr");
    app.footer(R"(Each subcommand has its own --help.

Exit codes:
  0   success
  64  bad usage (an unknown subcommand or flag names the one likely meant)
  69  a quorum of nodes is unreachable
  70  run: the lock was lost while CMD ran
  75  the lock could not be had within --wait-ms (run: -E N changes it)
  78  bad, unreadable or no config
  1   any other failure (check --strict: a node can lose acknowledged writes)
  run otherwise exits with CMD's status (128+N when CMD was killed by signal N).)");

    declare_run(app, into.run);
    declare_acquire(app, into.acquire);
    declare_release(app, into.release);
    declare_extend(app, into.extend);
    declare_status(app, into.status);
    declare_check(app, into.check);
    declare_operator_tools(app, into);
    declare_list(app, into.list);
    declare_election(app, into);
}

auto conflicting_flags(const options& opts, subcommand chosen) -> std::string {
    bool shared = false;
    std::optional<int> permits;
    bool fence = false;
    switch (chosen) {
        case subcommand::run:
            shared = opts.run.lock.shared;
            permits = opts.run.lock.permits;
            fence = opts.run.lock.fence;
            break;
        case subcommand::acquire:
            shared = opts.acquire.shared;
            permits = opts.acquire.permits;
            fence = opts.acquire.fence;
            break;
        case subcommand::release:
            shared = opts.release.shared;
            permits = opts.release.permits;
            break;
        case subcommand::extend:
            shared = opts.extend.shared;
            permits = opts.extend.permits;
            break;
        case subcommand::status:
        case subcommand::check:
        case subcommand::break_lock:
        case subcommand::audit:
        case subcommand::check_fence:
        case subcommand::list:
        case subcommand::elect:
        case subcommand::leader:
            return {};
    }
    if (shared && permits) {
        return "--shared and --permits " + std::to_string(*permits) +
               " cannot be combined: a lock is a reader (--shared) or a semaphore's permit "
               "(--permits), not both";
    }
    if (fence && permits) {
        return "--permits " + std::to_string(*permits) +
               " and --fence cannot be combined: a fencing token orders successive holders, "
               "and up to K permits hold at once";
    }
    return {};
}

auto chosen_subcommand(const CLI::App& app) -> subcommand {
    const std::map<std::string, subcommand> by_name{
        {"run", subcommand::run},         {"acquire", subcommand::acquire},
        {"release", subcommand::release}, {"extend", subcommand::extend},
        {"status", subcommand::status},   {"check", subcommand::check},
        {"list", subcommand::list},       {"break", subcommand::break_lock},
        {"audit", subcommand::audit},     {"check-fence", subcommand::check_fence},
        {"elect", subcommand::elect},     {"leader", subcommand::leader}};
    for (const auto* sub : app.get_subcommands()) {
        if (const auto found = by_name.find(sub->get_name()); found != by_name.end())
            return found->second;
    }
    return subcommand::check;  // unreachable: require_subcommand(1)
}

}  // namespace redlock::cli
