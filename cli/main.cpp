// redlock: a flock(1) for a fleet. Parses the command line and hands over to
// one function per subcommand (commands.hpp).
#include "commands.hpp"
#include "exit_codes.hpp"
#include "mistakes.hpp"
#include "options.hpp"
#include "output.hpp"
#include "signals.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <csignal>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

/// Where a usage error points: the subcommand's own --help once its name was
/// read ("redlock break --help" names --reason), else the tool's.
auto help_for(const CLI::App& app) -> std::string {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->parsed()) return "redlock " + sub->get_name() + " --help";
    }
    return "redlock --help";
}

}  // namespace

int main(int argc, char** argv) {
    using namespace redlock::cli;

    // Everything after the first "--" is run's CMD, never seen by the parser:
    // its flags are CMD's, not ours.
    int parsed_argc = argc;
    std::vector<std::string> command;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view{argv[i]} == "--") {
            parsed_argc = i;
            command.assign(argv + i + 1, argv + argc);
            break;
        }
    }
    const bool separator = parsed_argc < argc;
    // Known before parsing, so that even a parse error comes out as JSON.
    const bool json_mode = std::any_of(argv + 1, argv + parsed_argc, [](const char* a) {
        return std::string_view{a} == "--json";
    });

    CLI::App app{
        "redlock: a flock(1) for a fleet. Takes a Redlock lock on a majority of the quorum "
        "members named in the config, runs a command while holding it, or manages locks across "
        "invocations. A member is an independent standalone Redis master (\"nodes\"), a Redis "
        "Cluster (\"clusters\": its seeds; each lock goes to the master of its slot) or a "
        "master managed by Redis Sentinel (\"sentinel_masters\"); kinds mix in one config, and "
        "a lock needs a majority of all members. Members must be independent of each other: "
        "not replicas of one another, nor shards of one cluster listed as several members.",
        "redlock"};
    app.set_version_flag("--version", REDLOCK_VERSION);
    options opts;
    declare_options(app, opts);
    try {
        app.parse(parsed_argc, argv);
    } catch (const CLI::Success& e) {  // --help, --version
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // A mistyped word first: the parser would only say what is missing.
        std::string message = unknown_word_message(app, parsed_argc, argv);
        if (message.empty()) message = e.what();
        return reporter{json_mode, false}.fail(
            failure_report{exit_usage, "usage", message + " (see " + help_for(app) + ")"});
    }

    const reporter out{opts.global.json, opts.global.verbose};
    const subcommand chosen = chosen_subcommand(app);
    if (chosen == subcommand::run && opts.run.shell_command) {
        // flock -c: the shell runs it; there is no second command to choose.
        if (separator) {
            return out.fail(failure_report{
                exit_usage, "usage",
                "run takes -c 'SHELL COMMAND' or -- CMD [ARGS...], not both (see redlock run "
                "--help)"});
        }
        if (names_json_file(*opts.run.shell_command)) {
            return out.fail(failure_report{
                exit_usage, "usage",
                "'" + *opts.run.shell_command +
                    "' is a JSON file: '-c' inside run is the shell command (as flock -c); for "
                    "the config file use --config"});
        }
        command = {"/bin/sh", "-c", *opts.run.shell_command};
    }
    if (chosen == subcommand::run && command.empty()) {
        return out.fail(failure_report{
            exit_usage, "usage",
            "run needs a command after -- (or -c): redlock run --resource R [OPTIONS] -- CMD "
            "[ARGS...]"});
    }
    if (chosen == subcommand::elect && command.empty()) {
        return out.fail(failure_report{
            exit_usage, "usage",
            "elect needs a command after --: redlock elect --name N [OPTIONS] -- CMD [ARGS...]"});
    }
    if (chosen != subcommand::run && chosen != subcommand::elect && separator) {
        return out.fail(
            failure_report{exit_usage, "usage", "only run and elect take a command after --"});
    }
    if (const std::string conflict = conflicting_flags(opts, chosen); !conflict.empty())
        return out.fail(
            failure_report{exit_usage, "usage", conflict + " (see " + help_for(app) + ")"});
    (chosen == subcommand::elect ? opts.elect.run.command : opts.run.command) = std::move(command);

    const sigset_t ignored = ignored_at_start();
    // A node that closes its connection must not kill us with SIGPIPE; the
    // error is reported for that node instead.
    std::signal(SIGPIPE, SIG_IGN);
    try {
        switch (chosen) {
            case subcommand::run:
                block_run_signals();  // before the client starts its loop thread
                return run_command(opts.global, opts.run, ignored, out);
            case subcommand::acquire:
                return acquire_command(opts.global, opts.acquire, out);
            case subcommand::release:
                return release_command(opts.global, opts.release, out);
            case subcommand::extend:
                return extend_command(opts.global, opts.extend, out);
            case subcommand::status:
                return opts.status.permits ? semaphore_status_command(opts.global, opts.status, out)
                                           : status_command(opts.global, opts.status, out);
            case subcommand::check:
                return check_command(opts.global, opts.check, out);
            case subcommand::break_lock:
                return break_command(opts.global, opts.breaking, out);
            case subcommand::audit:
                return audit_command(opts.global, opts.audit, out);
            case subcommand::check_fence:
                return check_fence_command(opts.global, opts.fence, out);
            case subcommand::list:
                return list_command(opts.global, opts.list, out);
            case subcommand::elect:
                block_run_signals();  // before the client starts its loop thread
                return elect_command(opts.global, opts.elect, ignored, out);
            case subcommand::leader:
                block_run_signals();
                return leader_command(opts.global, opts.leader, out);
        }
    } catch (const std::exception& e) {
        return out.fail(failure_report{exit_failure, "internal", e.what()});
    }
    return exit_failure;
}
