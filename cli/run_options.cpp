// `redlock run`'s flags and help: the flock(1) habits, how CMD is ended when
// the lock fails, and what reaches CMD's process group.
#include "option_texts.hpp"
#include "options.hpp"

#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

namespace redlock::cli {
namespace {

/// -w SECONDS: a finite number from 0 to max_ms / 1000, fractions allowed; the
/// message names the value given.
const CLI::Validator wait_seconds{
    [](std::string& text) -> std::string {
        double value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(value) ||
            value < 0 || value * 1000 > static_cast<double>(max_ms))
            return "must be a number of seconds from 0 to 2147483.647 (fractions allowed, e.g. "
                   "0.5), not '" +
                   text + "'";
        return {};
    },
    ""};

}  // namespace

void add_end_flags(CLI::App& sub, run_options& into) {
    const CLI::Validator one_of_actions{
        [](std::string& text) -> std::string {
            if (text == "term" || text == "kill" || text == "ignore") return {};
            return "must be term, kill or ignore, not '" + text + "'";
        },
        "term|kill|ignore"};
    sub.add_option_function<std::string>(
           "--on-lost",
           [&into](const std::string& text) {
               into.on_lost = text == "kill"     ? on_lost_action::kill
                              : text == "ignore" ? on_lost_action::ignore
                                                 : on_lost_action::term;
           },
           "How CMD ends when the lock is failing: term sends SIGTERM once the validity left "
           "falls below --term-before-ms (renewals failing) or the lock is lost, then SIGKILL "
           "after --kill-after-ms and never later than the end of the validity; kill sends "
           "SIGKILL at that point instead; ignore lets CMD run on. run exits 70 in every case")
        ->check(one_of_actions)
        ->default_str("term");
    sub.add_option("--term-before-ms", into.term_before_ms,
                   "SIGTERM to CMD once the lock's validity left falls below this while "
                   "renewals fail, so that CMD is dead before another holder can be granted the "
                   "lock (default: a quarter of the TTL)")
        ->check(CLI::Range(0LL, max_ms));
    sub.add_flag("--pid-only", into.pid_only,
                 "Run CMD in redlock's own process group and send signals to CMD's pid "
                 "alone (the behaviour before 0.2.0): what CMD starts itself is then neither "
                 "signalled nor ended with it");
    sub.add_option("--kill-after-ms", into.kill_after_ms,
                   "With --on-lost term: grace period between SIGTERM and SIGKILL (cut short by "
                   "the end of the lock's validity)")
        ->capture_default_str()
        ->check(CLI::Range(0LL, max_ms));
}

void declare_run(CLI::App& app, run_options& into) {
    auto* run = app.add_subcommand(
        "run",
        "Hold a lock while a command runs: acquire it, renew it automatically while CMD runs, "
        "release it when CMD exits, and exit with CMD's status");
    auto* wait_ms = add_lock_flags(*run, into.lock);
    // flock(1)'s habits. Each excludes the others and --wait-ms: two ways of
    // saying how long to wait would leave one of them silently ignored.
    auto* wait =
        run->add_option_function<double>(
               "-w,--wait",
               [&into](double seconds) { into.lock.wait_ms = std::llround(seconds * 1000); },
               "As flock -w: how long to wait for the lock, in seconds (fractions "
               "allowed: -w 0.5). The same as --wait-ms, in seconds")
            ->type_name("SECONDS")
            ->check(wait_seconds);
    auto* nonblock = run->add_flag("-n,--nonblock", into.nonblock,
                                   "As flock -n: fail at once if the lock is held (one attempt, "
                                   "as --wait-ms 0, which is already the default)");
    wait->excludes(wait_ms);
    nonblock->excludes(wait_ms)->excludes(wait);
    run->add_option("-E,--conflict-exit-code", into.conflict_exit_code,
                    "As flock -E: the exit code when the lock could not be had (held by "
                    "another owner, or not within the wait), 0 to 255")
        ->capture_default_str()
        ->check(CLI::Range(0, 255));
    run->add_option("-c,--command", into.shell_command,
                    "As flock -c: run this shell command with /bin/sh -c instead of -- CMD "
                    "[ARGS...] (not both). Inside run, -c is this; the config is --config (a "
                    "JSON file given to -c is refused, exit 64)")
        ->type_name("'SHELL COMMAND'");
    add_end_flags(*run, into);
    run->footer(std::string{R"(Usage: redlock run --resource R [OPTIONS] -- CMD [ARGS...]
       redlock run --resource R [OPTIONS] -c 'SHELL COMMAND'

Unlike flock(1), which waits forever by default, run makes one attempt unless
told to wait (-w SECONDS or --wait-ms MS): the holder of a distributed lock may
be a crashed host whose TTL must run out, and a silent indefinite wait in a cron
job is a footgun. -n says "one attempt" explicitly.

CMD runs in a process group of its own, and "CMD" below means that group:
every signal run sends or forwards goes to the whole group, so the commands a
shell runs for -c 'a; b' are ended with it. When redlock runs in the
foreground of a terminal, CMD's group gets the terminal while it runs (CMD
reads it; ^C and ^Z reach it), and ^Z stops run with CMD until `fg`.

CMD never outlives run: if run dies, even by SIGKILL, the kernel sends CMD
SIGKILL (Linux PR_SET_PDEATHSIG) and a small guard process that run starts
SIGKILLs CMD's group. When CMD exits and processes it started are still in
its group, they get SIGTERM (SIGKILL after --kill-after-ms) and the lock is
released once they are gone. A process that leaves the group (setsid, a
daemon) is not covered. --pid-only keeps CMD in redlock's group and signals
its pid alone, as before 0.2.0.

CMD runs with REDLOCK_RESOURCE and REDLOCK_VALUE in its environment,
REDLOCK_FENCE when a fencing token was obtained, and REDLOCK_PERMIT (the permit's
index, 0 to K-1) with --permits K. With --shared, CMD runs as one of any number
of readers; with --permits K, as one of at most K holders.

SIGINT, SIGTERM and SIGHUP that redlock receives are forwarded to CMD's group
(with --pid-only: those sent by a process, to CMD's pid; the terminal's reach
CMD through the shared group already); one that redlock was started with
ignored (nohup) stays ignored for CMD. redlock then keeps holding the lock until CMD exits, and
exits with CMD's status. A signal that arrives while still waiting for the lock
cancels the wait: exit 128+N.

CMD is dead before the lock can pass on: when renewals fail, run sends SIGTERM
once the validity left falls below --term-before-ms, and SIGKILL no later than
a quarter of that before the validity ends (--on-lost ignore opts out).
)"} + global_help +
                R"(

Exit codes:
  N   CMD's exit status; 128+N when CMD was killed by signal N
  70  the lock was lost, or CMD was ended as its validity ran out (whatever CMD
      returned)
  75  the lock could not be had within --wait-ms (-E N: N instead)
  69  a quorum of nodes is unreachable
  126 CMD is not executable; 127 CMD was not found (the lock is released))" +
                common_exit_codes);
}

}  // namespace redlock::cli
