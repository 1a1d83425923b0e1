// `redlock run`: hold a lock while a command runs.
//
// Threads: the main thread does everything here, waiting in sigtimedwait. The
// client's loop thread only stores what it has to say (acquired, lost) and
// wakes the main thread with SIGUSR1; it inherited the blocked mask, so no
// signal is ever delivered to it.
#include "client_setup.hpp"
#include "commands.hpp"
#include "held_command.hpp"
#include "run_supervisor.hpp"
#include "signals.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
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
    auto locks = open_client(global, out, run.lock.wait_ms > 0);
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
    json extra;
    add_kind(extra, held);
    return run_while_held(
        *locks, run, ignored, out, *news,
        held_command{
            held, lock_environment(held),
            "acquired " + kind_phrase(held) + "'" + held.resource() + "' (value " + held.value() +
                ", valid for " + format_ms(held.remaining().count()) +
                (held.fence() ? ", fence " + std::to_string(*held.fence()) : std::string{}) + ")",
            [&] { return locks->release(held); }, std::move(extra),
            "the lock on '" + held.resource() + "'"});
}

}  // namespace redlock::cli
