#include "run_supervisor.hpp"

#include "signals.hpp"

#include <algorithm>
#include <string>
#include <string_view>

namespace redlock::cli {

using namespace std::chrono_literals;
using std::chrono::steady_clock;

auto is_forwarded(int sig, const sigset_t& ignored) noexcept -> bool {
    return (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && sigismember(&ignored, sig) == 0;
}

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

auto run_supervisor::supervise(child_process& child) -> child_exit {
    for (;;) {
        const child_state state = child.poll();
        if (state.ended) {
            terminal_.take_back(child.group());
            end_leftovers(child);
            // Finished after the validity ended: its critical section was not covered.
            if (!held_.valid()) note_lost(child);
            return *state.ended;
        }
        // With --pid-only CMD shares redlock's group: a ^Z stopped both already.
        if (child.group() > 0 && is_terminal_stop(state.stopped_by))
            terminal_.stop_with(child, state.stopped_by);
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

void run_supervisor::end_leftovers(child_process& child) {
    if (!child.group_alive()) return;
    // The lock is released when run returns: what CMD left running in its
    // group would run on without it. SIGTERM, then SIGKILL after
    // --kill-after-ms, or a kill lead before the validity ends.
    child.signal(SIGTERM);
    const auto now = steady_clock::now();
    const auto kill_at =
        std::min(now + timeline_.kill_after, held_.valid_until() - timeline_.kill_lead);
    out_.note("CMD exited, leaving processes in its group (pgid " + std::to_string(child.group()) +
              "): sent them SIGTERM; the lock is released once they are gone (--pid-only "
              "leaves them alone)");
    bool killed = false;
    // Bounded: SIGKILL ends every process of the group, and they are reaped
    // here (run is their subreaper) or by whoever adopted them.
    const auto give_up = std::max(kill_at, now) + 5s;
    while (child.group_alive() && steady_clock::now() < give_up) {
        if (!killed && steady_clock::now() >= kill_at) {
            child.signal(SIGKILL);
            killed = true;
            out_.note("processes of CMD's group had not exited after SIGTERM: sent SIGKILL");
        }
        const auto info = next_signal(10ms);
        if (info && is_forwarded(info->si_signo, ignored_)) forward(child, *info);
    }
}

namespace {

/// The library's reason for a loss, as run reports it. A failed renewal says the
/// lock "stays valid until its previous deadline": true of the lock in the library,
/// but run then ends CMD and releases the lock, so the words would promise a
/// validity nobody uses (issue 38, item 10).
auto loss_reason(std::string message) -> std::string {
    constexpr std::string_view stays = "; it stays valid until its previous deadline";
    if (const auto at = message.find(stays); at != std::string::npos)
        message.erase(at, stays.size());
    return message;
}

}  // namespace

void run_supervisor::note_lost(const child_process& child) {
    if (lost_) return;
    lost_ = true;
    {
        std::lock_guard held{news_.mutex};
        lost_reason_ = news_.lost ? loss_reason(news_.lost->message) : "its validity ended";
    }
    if (run_.on_lost == on_lost_action::ignore) {
        out_.note("lost the lock on '" + held_.resource() + "': --on-lost ignore, " +
                  name_of(child) + " runs on");
    }
}

void run_supervisor::send_term(const child_process& child, steady_clock::time_point now) {
    child.signal(SIGTERM);
    term_sent_ = now;
    const auto kill_by = std::chrono::ceil<std::chrono::milliseconds>(
        std::min(held_.valid_until(), now + timeline_.kill_after) - now);
    out_.note(why_now() + "sent SIGTERM to " + name_of(child) + ", SIGKILL in " +
              format_ms(kill_by.count()) + " at the latest");
}

void run_supervisor::send_kill(const child_process& child) {
    child.signal(SIGKILL);
    kill_sent_ = true;
    if (term_sent_) {
        const auto since =
            std::chrono::ceil<std::chrono::milliseconds>(steady_clock::now() - *term_sent_);
        out_.note(name_of(child) + " had not exited " + format_ms(since.count()) +
                  " after SIGTERM (--kill-after-ms, or the end of the lock's validity): sent "
                  "SIGKILL");
    } else {
        out_.note(why_now() + "sent SIGKILL to " + name_of(child));
    }
}

/// Why CMD is ended now: the lock was lost, or renewals are failing and its
/// validity is running out. Either way run exits 70.
auto run_supervisor::why_now() -> std::string {
    if (held_.lost()) {
        return "lost the lock on '" + held_.resource() + "': ";
    }
    lost_ = true;
    lost_reason_ = "renewals failed and its validity fell below --term-before-ms " +
                   format_ms(timeline_.term_before.count());
    const auto left =
        std::chrono::floor<std::chrono::milliseconds>(held_.valid_until() - steady_clock::now());
    return "renewals of the lock on '" + held_.resource() + "' are failing, " +
           format_ms(std::max<long long>(left.count(), 0)) + " of validity left: ";
}

auto run_supervisor::name_of(const child_process& child) -> std::string {
    if (child.group() > 0)
        return "CMD's process group (pgid " + std::to_string(child.group()) + ")";
    return "CMD (pid " + std::to_string(child.pid()) + ")";
}

void run_supervisor::forward(const child_process& child, const siginfo_t& info) const {
    const std::string name = signal_name(info.si_signo);
    // In its own group CMD gets no terminal signal through redlock's group:
    // every one redlock takes is passed on. In redlock's group (--pid-only) a
    // terminal's signal already reached CMD, and is not sent twice.
    if (child.group() > 0 || sent_by_process(info)) {
        child.signal(info.si_signo);
        out_.detail("forwarded " + name + " to " + name_of(child));
    } else {
        out_.detail(name + " from the terminal reached CMD's process group directly");
    }
}

}  // namespace redlock::cli
