// The operators' subcommands: break, audit, check-fence (README, "Operators' tools").
#include "option_texts.hpp"
#include "options.hpp"

#include <string>

namespace redlock::cli {
namespace {

void declare_break(CLI::App& app, break_options& into) {
    auto* sub = app.add_subcommand(
        "break",
        "Break a stuck lock: delete whatever holds RESOURCE on every node (its writer, its live "
        "readers, and with --permits K a semaphore's permits), and record each hold broken, "
        "with --reason, in the resource's audit stream on every node. The broken holders' "
        "renewals fail and say who broke it and why");
    sub->add_option("-r,--resource", into.resource, "Name of the lock")
        ->required()
        ->check(non_empty);
    sub->add_option("--reason", into.reason,
                    "Why it is broken: recorded in the audit and told to the broken holder "
                    "(required)")
        ->required()
        ->check(non_empty)
        ->type_name("TEXT");
    sub->add_option("--breaker", into.breaker,
                    "Who breaks it, for the audit (default: HOST:PID (redlock))")
        ->type_name("TEXT");
    add_permits_option(*sub, into.permits,
                       "The resource is a semaphore of K permits: break its permits too");
    sub->footer(std::string{global_help} + R"(

Exit codes:
  0   a majority of nodes ran the break: the resource is free
  69  fewer than a majority did (the holders may renew what is left))" +
                common_exit_codes);
}

void declare_audit(CLI::App& app, audit_options& into) {
    auto* sub = app.add_subcommand(
        "audit",
        "Show the breaks of RESOURCE (without --resource: of every resource, the most "
        "recently broken first), newest first, as a majority of nodes recorded them: when, "
        "who broke it and why, and the holder, value and fence counter it broke. Read-only");
    sub->add_option("-r,--resource", into.resource, "Name of the lock (default: every resource)")
        ->check(non_empty);
    sub->add_option("--limit", into.limit,
                    "How many of the newest entries to read per node (and, without --resource, "
                    "how many resources)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{10000}));
    sub->footer(std::string{global_help} + R"(

Exit codes:
  0   a quorum of nodes answered
  69  fewer than a quorum answered)" +
                common_exit_codes);
}

void declare_check_fence(CLI::App& app, fence_options& into) {
    auto* sub = app.add_subcommand(
        "check-fence",
        "Is fencing token N the current token of a lock that a majority of nodes hold right "
        "now? (Chubby's CheckSequencer.) Shows each node's counter and holder. The answer is "
        "true only when read; a resource that checks tokens itself is safer. Read-only");
    sub->add_option("-r,--resource", into.resource, "Name of the lock")
        ->required()
        ->check(non_empty);
    sub->add_option("--fence", into.fence, "The token to check")->required()->type_name("N");
    sub->footer(std::string{global_help} + R"(

Exit codes:
  0   current: a majority hold the lock with this token
  1   not current (stale, released, or never granted): the message says which
  69  fewer than a quorum answered)" +
                common_exit_codes);
}

}  // namespace

void declare_operator_tools(CLI::App& app, options& into) {
    declare_break(app, into.breaking);
    declare_audit(app, into.audit);
    declare_check_fence(app, into.fence);
}

}  // namespace redlock::cli
