// `redlock run`: hold a lock while a command runs.
//
// Threads: the main thread does everything here, waiting in sigtimedwait. The
// client's loop thread only stores what it has to say (acquired, lost) and
// wakes the main thread with SIGUSR1; it inherited the blocked mask, so no
// signal is ever delivered to it.
#include "client_setup.hpp"
#include "commands.hpp"
#include "group_guardian.hpp"
#include "run_supervisor.hpp"
#include "signals.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <sys/prctl.h>
#include <unistd.h>

namespace redlock::cli {
namespace {

using namespace std::chrono_literals;
using std::chrono::steady_clock;

/// REDLOCK_RESOURCE, REDLOCK_VALUE, REDLOCK_FENCE only with a token and
/// REDLOCK_PERMIT only with a permit (an inherited one is removed: CMD must not
/// take a stale one for its own).
auto lock_environment(const lock& held) -> child_process::environment {
    child_process::environment env{{"REDLOCK_RESOURCE", held.resource()},
                                   {"REDLOCK_VALUE", held.value()},
                                   {"REDLOCK_FENCE", std::nullopt},
                                   {"REDLOCK_PERMIT", std::nullopt}};
    if (const auto fence = held.fence()) env[2].second = std::to_string(*fence);
    if (const auto permit = held.permit()) env[3].second = std::to_string(*permit);
    return env;
}

/// The signals CMD gets the default disposition of: those we block or ignore
/// ourselves, except what the invoker ignored, which CMD keeps ignoring.
auto signals_to_reset(const sigset_t& ignored) -> sigset_t {
    sigset_t reset = run_signals();
    sigaddset(&reset, SIGPIPE);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
        if (sigismember(&ignored, sig) != 0) sigdelset(&reset, sig);
    }
    return reset;
}

/// "HOST:PID (CMD)": the library's default holder text, with the command's name
/// for the program's (every run is "redlock" otherwise).
auto default_run_holder(const std::vector<std::string>& command) -> std::string {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
        std::strcpy(host, "unknown-host");
    std::string program = command.empty() ? std::string{"redlock"} : command.front();
    // -c 'SHELL COMMAND' runs /bin/sh -c: its first word says more than "sh".
    if (command.size() == 3 && command[0] == "/bin/sh" && command[1] == "-c") {
        const auto start = command[2].find_first_not_of(" \t");
        if (start != std::string::npos)
            program = command[2].substr(start, command[2].find_first_of(" \t;&|", start) - start);
    }
    if (const auto slash = program.rfind('/'); slash != std::string::npos)
        program.erase(0, slash + 1);
    std::string text = std::string{host} + ":" + std::to_string(getpid()) + " (" + program + ")";
    if (text.size() > max_holder_length) text.resize(max_holder_length);
    return text;
}

/// Waits for the acquisition started with `ticket`; a SIGINT, SIGTERM or
/// SIGHUP (unless `ignored`) cancels it and is returned in `interrupted`.
auto await_lock(client& locks, client::acquire_ticket ticket, loop_news& news,
                const sigset_t& ignored, int& interrupted) -> result<lock> {
    for (;;) {
        {
            std::lock_guard held{news.mutex};
            if (news.acquired) return std::move(*news.acquired);
        }
        const auto info = next_signal(1s);
        if (info && is_forwarded(info->si_signo, ignored) && interrupted == 0) {
            interrupted = info->si_signo;
            locks.cancel(ticket);  // its callback still comes, with errc::cancelled
        }
    }
}

}  // namespace

auto run_command(const global_options& global, const run_options& run, const sigset_t& ignored,
                 const reporter& out) -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());

    auto news = std::make_shared<loop_news>();
    lock_options options = make_lock_options(run.lock);
    if (!options.holder) options.holder = default_run_holder(run.command);
    options.auto_renew = true;
    options.on_lost = [news](const lock&, const error& why) {
        {
            std::lock_guard held{news->mutex};
            news->lost = why;
        }
        wake_main_thread();
    };
    const auto ticket =
        locks->acquire_async(run.lock.resource, options, [news](result<lock> outcome) {
            {
                std::lock_guard held{news->mutex};
                news->acquired.emplace(std::move(outcome));
            }
            wake_main_thread();
        });
    int interrupted = 0;
    auto acquired = await_lock(*locks, ticket, *news, ignored, interrupted);
    if (interrupted != 0) {
        if (acquired) (void)locks->release(*acquired);  // granted just before the cancel
        return out.fail(failure_report{128 + interrupted, "interrupted",
                                       "interrupted by " + signal_name(interrupted) +
                                           " while waiting for the lock on '" + run.lock.resource +
                                           "'"});
    }
    if (!acquired) {
        failure_report failure = classify(acquired.error());
        // -E: not had (held, or not within the wait) gets the caller's code.
        if (failure.exit_code == exit_not_acquired) failure.exit_code = run.conflict_exit_code;
        return out.fail(failure, acquired.error().nodes);
    }
    const lock held = *acquired;

    const auto terminal = terminal_handoff::find();
    const spawn_options where{!run.pid_only, run.pid_only ? -1 : terminal.foreground_fd()};
    // What CMD's processes leave behind when they die comes to run, which
    // reaps it while it ends what is left of CMD's group.
    if (where.own_group) prctl(PR_SET_CHILD_SUBREAPER, 1);
    auto child =
        child_process::spawn(run.command, lock_environment(held), signals_to_reset(ignored), where);
    if (!child) {
        (void)locks->release(held);
        const int err = child.error();
        return out.fail(
            failure_report{err == ENOENT ? exit_not_found : exit_cannot_execute, "cannot_execute",
                           "cannot run '" + run.command.front() + "': " + std::strerror(err)});
    }
    out.detail("acquired " + kind_phrase(held) + "'" + held.resource() + "' (value " +
               held.value() + ", valid for " + format_ms(held.remaining().count()) +
               (held.fence() ? ", fence " + std::to_string(*held.fence()) : std::string{}) +
               "); CMD runs as pid " + std::to_string(child->pid()));

    // If run dies (even by SIGKILL), the guardian ends CMD's whole group.
    std::optional<group_guardian> guardian;
    if (where.own_group) {
        auto started = group_guardian::start(child->group());
        if (!started) {
            out.note(std::string{"warning: cannot start the guard of CMD's group ("} +
                     std::strerror(started.error()) +
                     "): if run dies, only CMD itself is killed with it");
        } else {
            guardian.emplace(std::move(*started));
        }
    }

    const auto ttl =
        run.lock.ttl_ms ? std::chrono::milliseconds{*run.lock.ttl_ms} : locks->config().lock.ttl;
    run_supervisor holder{run, timeline_of(run, ttl), ignored, out, held, *news, terminal};
    const child_exit ended = holder.supervise(*child);
    guardian.reset();

    // Also after a loss: nodes that still hold our value let go now, not at the TTL.
    auto report = locks->release(held);
    const std::size_t released = report ? report->deleted : 0;
    // Nodes still answering when the release was decided: the process waits for
    // them (bounded by request_timeout) as the client shuts down.
    const std::size_t pending = report ? report->pending : 0;
    json result{{"resource", held.resource()},
                {"value", held.value()},
                {"fence", fence_json(held)},
                {"child_status", ended.status()},
                {"child_signal", ended.signal != 0 ? json(ended.signal) : json(nullptr)},
                {"released", released},
                {"pending", pending}};
    add_kind(result, held);
    if (holder.lost()) {
        return out.fail(
            failure_report{exit_lock_lost, "lock_lost",
                           "lost the lock on '" + held.resource() + "' while CMD ran (" +
                               holder.lost_reason() + "); CMD exited with status " +
                               std::to_string(ended.status())},
            {}, result);
    }
    if (!report) {
        out.note("warning: release failed: " + report.error().message);
    } else if (!report->majority()) {
        out.note("warning: released on only " + std::to_string(released) + " of " +
                 std::to_string(report->nodes.size()) + " nodes; the rest expire with the TTL");
    } else {
        out.detail("released on " + std::to_string(released) + " of " +
                   std::to_string(report->nodes.size()) + " nodes");
    }
    out.result(result, "");
    return ended.status();
}

}  // namespace redlock::cli
