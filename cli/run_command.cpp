// `redlock run`: hold a lock while a command runs.
//
// Threads: the main thread does everything here, waiting in sigtimedwait. The
// client's loop thread only stores what it has to say (acquired, lost) and
// wakes the main thread with SIGUSR1; it inherited the blocked mask, so no
// signal is ever delivered to it.
#include "child_process.hpp"
#include "client_setup.hpp"
#include "commands.hpp"
#include "run_timeline.hpp"
#include "signals.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <unistd.h>

namespace redlock::cli {
namespace {

using namespace std::chrono_literals;
using std::chrono::steady_clock;

/// What the loop thread tells the main thread.
struct loop_news {
    std::mutex mutex;
    std::optional<result<lock>> acquired;
    std::optional<error> lost;
};

/// SIGINT, SIGTERM and SIGHUP, unless redlock was started with them ignored.
auto is_forwarded(int sig, const sigset_t& ignored) noexcept -> bool {
    return (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && sigismember(&ignored, sig) == 0;
}

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

/// Supervises CMD while the lock is held: forwards signals to it, and ends it
/// as run_timeline.hpp decides (before the validity ends when renewals fail,
/// at once when the lock is lost), unless --on-lost ignore.
class lock_holder {
public:
    lock_holder(const run_options& run, run_timeline_settings timeline, const sigset_t& ignored,
                const reporter& out, lock held, loop_news& news)
        : run_{run},
          timeline_{timeline},
          ignored_{ignored},
          out_{out},
          held_{std::move(held)},
          news_{news} {}

    /// Returns once CMD has ended, and how.
    auto supervise(child_process& child) -> child_exit {
        for (;;) {
            if (const auto ended = child.try_reap()) {
                // Finished after the validity ended: its critical section was not covered.
                if (!held_.valid()) note_lost(child);
                return *ended;
            }
            if (held_.lost()) note_lost(child);
            const auto now = steady_clock::now();
            const run_timeline_step step = decide_run_signal(
                timeline_, {now, held_.valid_until(), held_.lost(), term_sent_, kill_sent_});
            if (step.term) send_term(child, now);
            if (step.kill) send_kill(child);

            // The wake-ups come as signals; `next` bounds the wait for the
            // timeline's next deadline, and one second is a backstop.
            auto timeout = std::chrono::milliseconds{1s};
            if (step.next) {
                timeout = std::clamp(std::chrono::ceil<std::chrono::milliseconds>(*step.next - now),
                                     0ms, timeout);
            }
            const auto info = next_signal(timeout);
            if (info && is_forwarded(info->si_signo, ignored_)) forward(child, *info);
        }
    }

    [[nodiscard]] auto lost() const noexcept -> bool { return lost_; }
    [[nodiscard]] auto lost_reason() const -> const std::string& { return lost_reason_; }

private:
    /// The lock is lost (or its validity ended): run exits 70.
    void note_lost(const child_process& child) {
        if (lost_) return;
        lost_ = true;
        {
            std::lock_guard held{news_.mutex};
            lost_reason_ = news_.lost ? news_.lost->message : "its validity ended";
        }
        if (run_.on_lost == on_lost_action::ignore) {
            out_.note("lost the lock on '" + held_.resource() + "': --on-lost ignore, " +
                      pid_of(child) + " runs on");
        }
    }

    void send_term(const child_process& child, steady_clock::time_point now) {
        child.signal(SIGTERM);
        term_sent_ = now;
        const auto kill_by = std::chrono::ceil<std::chrono::milliseconds>(
            std::min(held_.valid_until(), now + timeline_.kill_after) - now);
        out_.note(why_now() + "sent SIGTERM to " + pid_of(child) + ", SIGKILL in " +
                  format_ms(kill_by.count()) + " at the latest");
    }

    void send_kill(const child_process& child) {
        child.signal(SIGKILL);
        kill_sent_ = true;
        if (term_sent_) {
            const auto since =
                std::chrono::ceil<std::chrono::milliseconds>(steady_clock::now() - *term_sent_);
            out_.note(pid_of(child) + " had not exited " + format_ms(since.count()) +
                      " after SIGTERM (--kill-after-ms, or the end of the lock's validity): sent "
                      "SIGKILL");
        } else {
            out_.note(why_now() + "sent SIGKILL to " + pid_of(child));
        }
    }

    /// Why CMD is ended now: the lock was lost, or renewals are failing and
    /// its validity is running out. Either way run exits 70.
    auto why_now() -> std::string {
        if (held_.lost()) {
            return "lost the lock on '" + held_.resource() + "': ";
        }
        lost_ = true;
        lost_reason_ = "renewals failed and its validity fell below --term-before-ms " +
                       format_ms(timeline_.term_before.count());
        const auto left = std::chrono::floor<std::chrono::milliseconds>(held_.valid_until() -
                                                                        steady_clock::now());
        return "renewals of the lock on '" + held_.resource() + "' are failing, " +
               format_ms(std::max<long long>(left.count(), 0)) + " of validity left: ";
    }

    static auto pid_of(const child_process& child) -> std::string {
        return "CMD (pid " + std::to_string(child.pid()) + ")";
    }

    void forward(const child_process& child, const siginfo_t& info) const {
        const std::string name = signal_name(info.si_signo);
        if (sent_by_process(info)) {
            child.signal(info.si_signo);
            out_.detail("forwarded " + name + " to CMD (pid " + std::to_string(child.pid()) + ")");
        } else {
            out_.detail(name + " from the terminal reached CMD's process group directly");
        }
    }

    const run_options& run_;
    run_timeline_settings timeline_;
    const sigset_t& ignored_;
    const reporter& out_;
    lock held_;
    loop_news& news_;
    bool lost_ = false;
    std::string lost_reason_;
    std::optional<steady_clock::time_point> term_sent_;
    bool kill_sent_ = false;
};

/// --on-lost, --term-before-ms and --kill-after-ms as the timeline's settings.
auto timeline_of(const run_options& run, std::chrono::milliseconds ttl) -> run_timeline_settings {
    run_timeline_settings s;
    s.policy = run.on_lost == on_lost_action::kill     ? run_policy::kill
               : run.on_lost == on_lost_action::ignore ? run_policy::ignore
                                                       : run_policy::term;
    s.term_before = run.term_before_ms ? std::chrono::milliseconds{*run.term_before_ms}
                                       : default_term_before(ttl);
    s.kill_after = std::chrono::milliseconds{run.kill_after_ms};
    s.kill_lead = default_kill_lead(s.term_before);
    return s;
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

    auto child =
        child_process::spawn(run.command, lock_environment(held), signals_to_reset(ignored));
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

    const auto ttl =
        run.lock.ttl_ms ? std::chrono::milliseconds{*run.lock.ttl_ms} : locks->config().lock.ttl;
    lock_holder holder{run, timeline_of(run, ttl), ignored, out, held, *news};
    const child_exit ended = holder.supervise(*child);

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
