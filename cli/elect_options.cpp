// `redlock elect` and `redlock leader`: leader election (README, "Leader election").
#include "option_texts.hpp"
#include "options.hpp"

#include <string>

namespace redlock::cli {
namespace {

void declare_elect(CLI::App& app, elect_options& into) {
    auto* sub = app.add_subcommand(
        "elect",
        "Campaign in election NAME and run CMD only while this process leads (hot standby): "
        "wait in line until the leader resigns or is gone, run CMD as the leader, and end it "
        "as run does when the leadership is lost");
    sub->add_option("--name", into.run.lock.resource, "Name of the election")
        ->required()
        ->check(non_empty);
    sub->add_option("--proposal", into.proposal,
                    "The value this process proclaims when it leads (shown by `redlock leader`)")
        ->type_name("TEXT");
    sub->add_option("--ttl-ms", into.run.lock.ttl_ms,
                    "The leadership's TTL (renewed while leading; default: the config's "
                    "lock.ttl_ms): how long a crashed leader keeps the standbys waiting")
        ->check(CLI::Range(1LL, max_ms));
    sub->add_option("--wait-ms", into.run.lock.wait_ms,
                    "Give up after waiting this long to lead (exit 75); 0, the default: wait "
                    "until interrupted")
        ->check(CLI::Range(0LL, max_ms));
    sub->add_option("--holder", into.run.lock.holder,
                    "Who campaigns, for people (default: HOST:PID (CMD))")
        ->type_name("TEXT");
    add_end_flags(*sub, into.run);
    sub->footer(
        std::string{R"(Usage: redlock elect --name N [--proposal TEXT] [OPTIONS] -- CMD [ARGS...]

Candidates are served in arrival order. The leader runs CMD with REDLOCK_NAME,
REDLOCK_TERM (the term: a fencing token, strictly greater than every earlier
leader's), REDLOCK_PROPOSAL and REDLOCK_VALUE (its lock's value) in the
environment. CMD runs and is ended exactly as under `run`: in a process group
of its own, ended (SIGTERM, then SIGKILL) before the leadership can pass on
when renewals fail, and never outliving elect. When CMD exits, elect resigns
and the next candidate in line leads. A SIGINT, SIGTERM or SIGHUP while waiting
ends the campaign: exit 128+N.)"} +
        global_help +
        R"(

Exit codes:
  N   CMD's exit status; 128+N when CMD was killed by signal N
  70  the leadership was lost, or CMD was ended as its validity ran out
  75  not leading within --wait-ms
  69  a quorum of nodes is unreachable
  126 CMD is not executable; 127 CMD was not found (elect resigns))" +
        common_exit_codes);
}

void declare_leader(CLI::App& app, leader_flags& into) {
    auto* sub = app.add_subcommand(
        "leader",
        "Show who leads election NAME as a majority of nodes say (value, term, holder, "
        "validity left), and with --watch every change until SIGINT or SIGTERM. Read-only");
    sub->add_option("--name", into.name, "Name of the election")->required()->check(non_empty);
    sub->add_flag("--watch", into.watch,
                  "Follow the election: one line (with --json, one JSON object) now and one per "
                  "change (a new term, a proclaimed value, a resignation, a leader gone) until "
                  "SIGINT or SIGTERM. Changes are pushed by the nodes (no polling)");
    sub->footer(std::string{global_help} + R"(

Exit codes:
  0   a majority answered (with or without a leader; --watch: ended by a signal)
  69  fewer than a majority answered)" +
                common_exit_codes);
}

}  // namespace

void declare_election(CLI::App& app, options& into) {
    declare_elect(app, into.elect);
    declare_leader(app, into.leader);
}

}  // namespace redlock::cli
