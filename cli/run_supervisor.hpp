#pragma once

// What `redlock run` does while the lock is held: CMD's signals, its
// terminal, and its end, as run_timeline.hpp decides.
#include "child_process.hpp"
#include "options.hpp"
#include "output.hpp"
#include "run_timeline.hpp"
#include "terminal_handoff.hpp"

#include <redlock/redlock.hpp>

#include <chrono>
#include <csignal>
#include <mutex>
#include <optional>
#include <string>

namespace redlock::cli {

/// What the client's loop thread tells the main thread.
struct loop_news {
    std::mutex mutex;
    std::optional<result<lock>> acquired;
    std::optional<error> lost;
};

/// SIGINT, SIGTERM and SIGHUP, unless redlock was started with them ignored.
[[nodiscard]] auto is_forwarded(int sig, const sigset_t& ignored) noexcept -> bool;

/// --on-lost, --term-before-ms and --kill-after-ms as the timeline's settings.
[[nodiscard]] auto timeline_of(const run_options& run, std::chrono::milliseconds ttl)
    -> run_timeline_settings;

/// Supervises CMD while the lock is held: forwards signals to it, stops and
/// continues with it (^Z), and ends it as run_timeline.hpp decides (before
/// the validity ends when renewals fail, at once when the lock is lost),
/// unless --on-lost ignore. Without --pid-only, "CMD" is its process group.
class run_supervisor {
public:
    run_supervisor(const run_options& run, run_timeline_settings timeline, const sigset_t& ignored,
                   const reporter& out, lock held, loop_news& news, terminal_handoff terminal)
        : run_{run},
          timeline_{timeline},
          ignored_{ignored},
          out_{out},
          held_{std::move(held)},
          news_{news},
          terminal_{terminal} {}

    /// Returns once CMD has ended, and how; with its own group, once nothing
    /// of that group runs any more.
    auto supervise(child_process& child) -> child_exit;

    [[nodiscard]] auto lost() const noexcept -> bool { return lost_; }
    [[nodiscard]] auto lost_reason() const -> const std::string& { return lost_reason_; }

private:
    void end_leftovers(child_process& child);
    void note_lost(const child_process& child);
    void send_term(const child_process& child, std::chrono::steady_clock::time_point now);
    void send_kill(const child_process& child);
    auto why_now() -> std::string;
    void forward(const child_process& child, const siginfo_t& info) const;
    static auto name_of(const child_process& child) -> std::string;

    const run_options& run_;
    run_timeline_settings timeline_;
    const sigset_t& ignored_;
    const reporter& out_;
    lock held_;
    loop_news& news_;
    terminal_handoff terminal_;
    bool lost_ = false;
    std::string lost_reason_;
    std::optional<std::chrono::steady_clock::time_point> term_sent_;
    bool kill_sent_ = false;
};

}  // namespace redlock::cli
