// Leader election (README, "Leader election"): every instance of a service
// campaigns; the one that leads does the work, passing its term to what it
// writes to, and the others wait in line as hot standbys. An observer follows
// who leads. Run several at once: ./redlock_election_example configs/local.json
#include <redlock/redlock.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>

int main(int argc, char** argv) {
    auto config = redlock::load_config(argc > 1 ? argv[1] : "configs/local.json");
    if (!config) return std::fprintf(stderr, "%s\n", config.error().what().c_str()), 78;
    auto nodes = redlock::client::create(*config);
    if (!nodes) return std::fprintf(stderr, "%s\n", nodes.error().message.c_str()), 78;

    // Who leads, now and at every change: pushed by the nodes, not polled.
    auto watching = nodes->observe("reports", [](const redlock::election_view& view) {
        if (view.leader) {
            std::printf("leader: %s (term %llu)\n", view.leader->value.c_str(),
                        static_cast<unsigned long long>(view.leader->term));
        } else {
            std::printf("no leader\n");
        }
    });
    if (!watching) return std::fprintf(stderr, "%s\n", watching.error().message.c_str()), 1;

    // Waits in arrival order until this process leads (or max_wait, if set).
    const std::string me = "worker-" + std::to_string(getpid());
    redlock::campaign_options options;
    options.ttl = std::chrono::seconds{5};  // a crashed leader is replaced within this
    auto leading = nodes->campaign("reports", me, options);
    if (!leading) return std::fprintf(stderr, "%s\n", leading.error().message.c_str()), 75;

    // Work while valid(); a real leader passes term() to its storage, which
    // refuses writes from lower terms (a deposed leader that has not noticed yet).
    for (int round = 0; round < 3 && leading->valid(); ++round) {
        std::printf("%s leads in term %llu, round %d\n", me.c_str(),
                    static_cast<unsigned long long>(leading->term()), round);
        if (auto said = leading->proclaim(me + " at round " + std::to_string(round)); !said)
            std::fprintf(stderr, "proclaim: %s\n", said.error().message.c_str());
        std::this_thread::sleep_for(std::chrono::seconds{1});
    }
    if (leading->lost()) return std::fprintf(stderr, "leadership lost\n"), 70;
    // Steps down: the next candidate in line leads at once.
    return leading->resign() ? 0 : 1;
}
