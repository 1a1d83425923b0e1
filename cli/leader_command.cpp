// `redlock leader`: who leads an election; with --watch, every change, pushed
// to the client by the nodes (client::observe), until SIGINT or SIGTERM.
#include "client_setup.hpp"
#include "commands.hpp"
#include "signals.hpp"

#include <chrono>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>

namespace redlock::cli {
namespace {

using namespace std::chrono_literals;

auto view_json(const election_view& view) -> json {
    json leader = nullptr;
    if (view.leader) {
        leader = json{{"value", view.leader->value},
                      {"term", view.leader->term},
                      {"holder", view.leader->holder},
                      {"validity_ms", view.leader->validity.count()},
                      {"proclaimed", view.leader->proclaimed}};
    }
    return json{{"name", view.name},
                {"leader", leader},
                {"highest_term", view.highest_term},
                {"agreeing", view.agreeing},
                {"answered", view.answered},
                {"quorum", view.quorum}};
}

auto view_text(const election_view& view) -> std::string {
    if (!view.leader) {
        return "no leader of '" + view.name + "' (highest term " +
               std::to_string(view.highest_term) + ")\n";
    }
    const leader_info& l = *view.leader;
    return "leader of '" + view.name + "': " + shell_quoted(l.value) + " (term " +
           std::to_string(l.term) + (l.holder.empty() ? std::string{} : ", held by " + l.holder) +
           ", valid for " + format_ms(l.validity.count()) + ")\n";
}

struct watch_news {
    std::mutex mutex;
    std::deque<election_view> views;
};

auto watch(client& locks, const leader_flags& args, const reporter& out) -> int {
    auto news = std::make_shared<watch_news>();
    auto observing = locks.observe(args.name, [news](const election_view& view) {
        {
            const std::lock_guard held{news->mutex};
            news->views.push_back(view);
        }
        wake_main_thread();
    });
    if (!observing) return out.fail(observing.error());
    for (;;) {
        std::deque<election_view> views;
        {
            const std::lock_guard held{news->mutex};
            views.swap(news->views);
        }
        for (const auto& view : views) {
            if (out.json_mode()) {
                std::cout << view_json(view).dump() << '\n';
            } else {
                std::cout << view_text(view);
            }
        }
        std::cout.flush();
        const auto info = next_signal(1s);
        if (info && (info->si_signo == SIGINT || info->si_signo == SIGTERM)) return exit_ok;
    }
}

}  // namespace

auto leader_command(const global_options& global, const leader_flags& args, const reporter& out)
    -> int {
    auto locks = open_client(global, out);
    if (!locks) return out.fail(locks.error());
    if (args.watch) return watch(*locks, args, out);
    auto view = locks->leader(args.name);
    if (!view) return out.fail(view.error());
    out.result(view_json(*view), view_text(*view));
    return exit_ok;
}

}  // namespace redlock::cli
