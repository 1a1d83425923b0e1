// run_while_held: CMD's life while `run` (or `elect`) holds its lock.
#include "held_command.hpp"

#include "exit_codes.hpp"
#include "group_guardian.hpp"
#include "signals.hpp"
#include "terminal_handoff.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <sys/prctl.h>
#include <unistd.h>
#include <utility>

namespace redlock::cli {

auto signals_to_reset(const sigset_t& ignored) -> sigset_t {
    sigset_t reset = run_signals();
    sigaddset(&reset, SIGPIPE);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
        if (sigismember(&ignored, sig) != 0) sigdelset(&reset, sig);
    }
    return reset;
}

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

auto run_while_held(client& locks, const run_options& run, const sigset_t& ignored,
                    const reporter& out, loop_news& news, held_command what) -> int {
    const lock& held = what.held;
    const auto terminal = terminal_handoff::find();
    spawn_options where{!run.pid_only, run.pid_only ? -1 : terminal.foreground_fd(), {}};
    // If run dies (even by SIGKILL), the guardian ends CMD's whole group. It is
    // started before CMD may exec: a SIGKILL right after would otherwise find
    // what CMD started running and no guardian to end it.
    std::optional<group_guardian> guardian;
    std::string guardian_failed;
    if (where.own_group) {
        where.before_exec = [&guardian, &guardian_failed](pid_t group) {
            auto started = group_guardian::start(group);
            if (started) {
                guardian.emplace(std::move(*started));
            } else {
                guardian_failed = std::strerror(started.error());
            }
        };
    }
    // What CMD's processes leave behind when they die comes to run, which
    // reaps it while it ends what is left of CMD's group.
    if (where.own_group) prctl(PR_SET_CHILD_SUBREAPER, 1);
    auto child = child_process::spawn(run.command, std::move(what.environment),
                                      signals_to_reset(ignored), where);
    if (!child) {
        (void)what.let_go();
        const int err = child.error();
        return out.fail(
            failure_report{err == ENOENT ? exit_not_found : exit_cannot_execute, "cannot_execute",
                           "cannot run '" + run.command.front() + "': " + std::strerror(err)});
    }
    out.detail(what.started + "; CMD runs as pid " + std::to_string(child->pid()));

    if (!guardian_failed.empty()) {
        out.note("warning: cannot start the guard of CMD's group (" + guardian_failed +
                 "): if run dies, only CMD itself is killed with it");
    }

    const auto ttl =
        run.lock.ttl_ms ? std::chrono::milliseconds{*run.lock.ttl_ms} : locks.config().lock.ttl;
    run_supervisor holder{run, timeline_of(run, ttl), ignored, out, held, news, terminal};
    const child_exit ended = holder.supervise(*child);
    guardian.reset();

    // Also after a loss: nodes that still hold our value let go now, not at the TTL.
    auto report = what.let_go();
    const std::size_t released = report ? report->deleted : 0;
    // Nodes still answering when the release was decided: the process waits for
    // them (bounded by request_timeout) as the client shuts down.
    const std::size_t pending = report ? report->pending : 0;
    json result = std::move(what.extra);
    result["resource"] = held.resource();
    result["value"] = held.value();
    result["fence"] = fence_json(held);
    result["child_status"] = ended.status();
    result["child_signal"] = ended.signal != 0 ? json(ended.signal) : json(nullptr);
    result["released"] = released;
    result["pending"] = pending;
    if (holder.lost()) {
        return out.fail(
            failure_report{exit_lock_lost, "lock_lost",
                           "lost " + what.lost_phrase + " while CMD ran (" + holder.lost_reason() +
                               "); CMD exited with status " + std::to_string(ended.status())},
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
