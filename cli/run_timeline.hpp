#pragma once

// When `redlock run` signals its command, with no I/O: times in, signals out.
//
// The rule: the command is dead before the lock can pass on. The nodes let a
// lock go when its TTL runs out there, and the holder's validity ends before
// that (it has the elapsed time and the clock drift taken off). So:
// - SIGTERM once the validity left falls below term_before (renewals failing:
//   a healthy renewal keeps it near the TTL), or at once when the lock is
//   reported lost;
// - SIGKILL kill_after after SIGTERM, and never later than kill_lead before
//   the end of the validity, whatever kill_after says (the lead absorbs how
//   late this process and the kernel may act on a loaded host: the margin the
//   nodes keep after the validity, the clock drift, is only milliseconds);
// - with the kill policy, SIGKILL where the term policy sends SIGTERM;
// - with the ignore policy, nothing (the explicit opt-out).
// The shell (run_command.cpp) calls decide() on every wake-up and sleeps no
// later than `next`. tests/unit/run_timeline_test.cpp checks every case on a
// millisecond grid, and that no wake-up comes late.

#include <algorithm>
#include <chrono>
#include <optional>

namespace redlock::cli {

enum class run_policy { term, kill, ignore };

struct run_timeline_settings {
    run_policy policy = run_policy::term;
    std::chrono::milliseconds term_before{0};
    std::chrono::milliseconds kill_after{5000};
    /// SIGKILL at the latest this long before the validity ends.
    std::chrono::milliseconds kill_lead{0};
};

/// The SIGTERM lead over the end of the validity when --term-before-ms is not
/// given: a quarter of the TTL. A renewal starts once a third of the TTL has
/// passed, so a healthy lock never comes near it, and the command still gets a
/// quarter of the TTL to exit cleanly before SIGKILL.
[[nodiscard]] constexpr auto default_term_before(std::chrono::milliseconds ttl) noexcept
    -> std::chrono::milliseconds {
    return ttl / 4;
}

/// The SIGKILL lead over the end of the validity: a quarter of term_before, so
/// that the command keeps three quarters of it to exit cleanly after SIGTERM.
[[nodiscard]] constexpr auto default_kill_lead(std::chrono::milliseconds term_before) noexcept
    -> std::chrono::milliseconds {
    return term_before / 4;
}

struct run_timeline_input {
    std::chrono::steady_clock::time_point now;
    /// The lock's validity end as known now (each renewal moves it).
    std::chrono::steady_clock::time_point valid_until;
    /// A majority said the key is no longer ours, or the renewal gave up.
    bool lost = false;
    /// When SIGTERM went to the command, if it did.
    std::optional<std::chrono::steady_clock::time_point> term_sent;
    bool kill_sent = false;
};

struct run_timeline_step {
    bool term = false;  ///< send SIGTERM now
    bool kill = false;  ///< send SIGKILL now
    /// Look again by then at the latest (unset: no deadline is left).
    std::optional<std::chrono::steady_clock::time_point> next;
};

[[nodiscard]] inline auto decide_run_signal(const run_timeline_settings& s,
                                            const run_timeline_input& in) -> run_timeline_step {
    run_timeline_step step;
    if (s.policy == run_policy::ignore || in.kill_sent) return step;
    const auto term_at = in.valid_until - s.term_before;
    const bool due = in.lost || in.now >= term_at;
    // SIGKILL: the validity is over, SIGTERM had its time, or the policy says kill.
    auto kill_at = in.valid_until - s.kill_lead;
    if (in.term_sent) kill_at = std::min(kill_at, *in.term_sent + s.kill_after);
    if (in.now >= kill_at || (due && s.policy == run_policy::kill)) {
        step.kill = true;
        return step;
    }
    if (due && !in.term_sent) {
        step.term = true;
        // The SIGTERM sent now starts kill_after.
        kill_at = std::min(in.valid_until - s.kill_lead, in.now + s.kill_after);
    }
    // term_at is a deadline unless its SIGTERM went already (the kill policy kills there).
    step.next = kill_at;
    if (!due && (!in.term_sent || s.policy == run_policy::kill))
        step.next = std::min(kill_at, term_at);
    return step;
}

}  // namespace redlock::cli
