#pragma once

#include <chrono>
#include <csignal>
#include <optional>
#include <string>

namespace redlock::cli {

/// The signals `redlock run` takes in its main thread with sigtimedwait rather
/// than with handlers: SIGINT, SIGTERM and SIGHUP (to forward to CMD), SIGCHLD
/// (CMD ended) and SIGUSR1 (news from the client's loop thread).
[[nodiscard]] auto run_signals() -> sigset_t;

/// The signals among SIGINT, SIGTERM, SIGHUP and SIGPIPE that redlock was
/// started with ignored (SIG_IGN), as under nohup or in a non-interactive
/// shell's background job. `run` neither forwards them nor resets them for CMD,
/// which ignores them as it would have without redlock. Call it before changing
/// any disposition.
[[nodiscard]] auto ignored_at_start() -> sigset_t;

/// Blocks run_signals() in the calling thread. Threads created afterwards (the
/// client's loop thread and libuv's workers) inherit the mask, so each of these
/// signals stays pending until the main thread takes it: call it before
/// client::create. Also restores SIGCHLD's default disposition: an inherited
/// SIG_IGN would have the kernel reap CMD behind our back.
void block_run_signals();

/// Wakes the main thread out of next_signal(). Any thread; async-signal-safe.
void wake_main_thread() noexcept;

/// The next pending signal of run_signals(), waiting at most `timeout`;
/// nullopt when none came.
[[nodiscard]] auto next_signal(std::chrono::milliseconds timeout) -> std::optional<siginfo_t>;

/// True when a process sent it (kill, sigqueue); false when the kernel did, as
/// for a terminal's ^C, which the whole foreground process group (CMD too)
/// already received.
[[nodiscard]] auto sent_by_process(const siginfo_t& info) noexcept -> bool;

/// "SIGTERM", or "signal 42" for one without a name.
[[nodiscard]] auto signal_name(int sig) -> std::string;

}  // namespace redlock::cli
