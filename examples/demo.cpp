// A short tour against the masters of a config file: one acquisition, two
// clients contending for the same resource, and the validity that is left.
#include <redlock/redlock.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;

void say(const char* who, const std::string& what) {
    std::printf("%-9s %s\n", who, what.c_str());
}

auto ms(std::chrono::milliseconds d) -> std::string {
    return std::to_string(d.count()) + " ms";
}

}  // namespace

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "configs/local.json";
    auto config = redlock::load_config(path);
    if (!config) {
        std::fprintf(stderr, "demo: %s\n", config.error().what().c_str());
        return 78;
    }
    auto alice = redlock::client::create(*config);
    auto bob = redlock::client::create(*config);
    if (!alice || !bob) {
        std::fprintf(stderr, "demo: %s\n", (!alice ? alice : bob).error().message.c_str());
        return 78;
    }
    std::printf("redlock demo: %zu independent masters from %s, majority %zu\n\n",
                alice->node_count(), path, alice->node_count() / 2 + 1);

    // 1. One acquisition.
    auto held = alice->acquire("demo:invoice-42", {.ttl = 10s});
    if (!held) {
        say("alice", "could not lock: " + held.error().message);
        return 69;
    }
    say("alice", "locked demo:invoice-42 (ttl 10000 ms), validity left " + ms(held->remaining()) +
                     ", value " + held->value());

    // 2. Contention: bob tries twice while alice holds it.
    auto denied = bob->acquire("demo:invoice-42", {.attempts = 2});
    say("bob", denied ? "locked it too?! (this would be a bug)"
                      : "refused after " + std::to_string(denied.error().attempts) +
                            " attempts: " + denied.error().code.message());

    auto report = alice->release(*held);
    say("alice", "released: " + std::to_string(report ? report->deleted : 0) + " of " +
                     std::to_string(alice->node_count()) + " nodes deleted the key");

    auto after = bob->acquire("demo:invoice-42", {.ttl = 10s});
    if (after) {
        say("bob",
            "locked demo:invoice-42 once alice let go, validity left " + ms(after->remaining()));
        (void)bob->release(*after);
    }

    // 3. Both race for one resource, 5 times each, waiting up to 2 s per turn.
    std::printf("\nalice and bob each take demo:counter 5 times (hold 20 ms):\n");
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    const auto worker = [&](redlock::client& c, const char* who) {
        for (int i = 0; i < 5; ++i) {
            auto l = c.acquire("demo:counter", {.ttl = 2s, .max_wait = 2s});
            if (!l) {
                say(who, "gave up: " + l.error().code.message());
                continue;
            }
            if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
            say(who, "holds demo:counter, validity left " + ms(l->remaining()));
            std::this_thread::sleep_for(20ms);  // the critical section
            inside.fetch_sub(1);
            (void)c.release(*l);
        }
    };
    std::thread a{worker, std::ref(*alice), "alice"};
    std::thread b{worker, std::ref(*bob), "bob"};
    a.join();
    b.join();
    std::printf("\noverlapping critical sections: %d\n", overlaps.load());
    return overlaps.load() == 0 ? 0 : 1;
}
