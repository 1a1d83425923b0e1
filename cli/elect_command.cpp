// `redlock elect`: campaign, then run CMD while leading (as `run` runs it
// while holding its lock: held_command.hpp). Threads as in run_command.cpp:
// the loop thread stores its news and wakes the main thread with SIGUSR1.
#include "client_setup.hpp"
#include "commands.hpp"
#include "held_command.hpp"
#include "signals.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

namespace redlock::cli {
namespace {

using namespace std::chrono_literals;

struct campaign_news {
    std::mutex mutex;
    std::optional<result<leadership>> won;
};

auto election_environment(const leadership& leading, const std::string& proposal)
    -> child_process::environment {
    return {{"REDLOCK_NAME", leading.name()},
            {"REDLOCK_TERM", std::to_string(leading.term())},
            {"REDLOCK_PROPOSAL", proposal},
            {"REDLOCK_RESOURCE", leading.name()},
            {"REDLOCK_VALUE", leading.held().value()},
            {"REDLOCK_FENCE", std::to_string(leading.term())},
            {"REDLOCK_PERMIT", std::nullopt}};
}

}  // namespace

auto elect_command(const global_options& global, const elect_options& elect,
                   const sigset_t& ignored, const reporter& out) -> int {
    const run_options& run = elect.run;
    const std::string& name = run.lock.resource;
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());

    auto news = std::make_shared<loop_news>();
    auto campaign = std::make_shared<campaign_news>();
    campaign_options options;
    if (run.lock.ttl_ms) options.ttl = std::chrono::milliseconds{*run.lock.ttl_ms};
    if (run.lock.wait_ms > 0) options.max_wait = std::chrono::milliseconds{run.lock.wait_ms};
    options.holder = run.lock.holder ? *run.lock.holder : default_run_holder(run.command);
    options.on_lost = [news](const leadership&, const error& why) {
        {
            const std::lock_guard held{news->mutex};
            news->lost = why;
        }
        wake_main_thread();
    };
    const auto ticket = locks->campaign_async(name, elect.proposal, std::move(options),
                                              [campaign](result<leadership> outcome) {
                                                  {
                                                      const std::lock_guard held{campaign->mutex};
                                                      campaign->won.emplace(std::move(outcome));
                                                  }
                                                  wake_main_thread();
                                              });
    out.detail("campaigning in '" + name + "'");
    int interrupted = 0;
    std::optional<result<leadership>> won;
    while (!won) {
        {
            const std::lock_guard held{campaign->mutex};
            if (campaign->won) won.emplace(std::move(*campaign->won));
        }
        if (won) break;
        const auto info = next_signal(1s);
        if (info && is_forwarded(info->si_signo, ignored) && interrupted == 0) {
            interrupted = info->si_signo;
            locks->cancel(ticket);  // its callback still comes, with errc::cancelled
        }
    }
    if (interrupted != 0) {
        if (*won) (void)(*won)->resign();  // won just before the cancel
        return out.fail(failure_report{
            128 + interrupted, "interrupted",
            "interrupted by " + signal_name(interrupted) + " while campaigning in '" + name + "'"});
    }
    if (!*won) return out.fail(classify(won->error()), won->error().nodes);
    leadership leading = **won;
    json extra{{"name", name}, {"term", leading.term()}, {"proposal", elect.proposal}};
    return run_while_held(
        *locks, run, ignored, out, *news,
        held_command{leading.held(), election_environment(leading, elect.proposal),
                     "leading '" + name + "' (term " + std::to_string(leading.term()) +
                         ", valid for " + format_ms(leading.held().remaining().count()) + ")",
                     [&leading] { return leading.resign(); }, std::move(extra),
                     "the leadership of '" + name + "'"});
}

}  // namespace redlock::cli
