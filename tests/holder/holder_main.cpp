// A lock holder in its own process, for tests that SIGKILL a holder: it takes
// the lock, says "held <value>" on stdout, and then waits to be killed. With
// "release" after the TTL it releases the lock instead, shuts its client down and
// exits 0 (1 if the release failed): a whole client's life, for a test that starts
// it with its standard streams closed.
//   redlock_test_holder <config.json> <resource> <ttl_ms> [release]
#include <redlock/redlock.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

int main(int argc, char** argv) {
    const bool release = argc == 5 && std::string_view{argv[4]} == "release";
    if (argc != 4 && !release) {
        std::fprintf(stderr, "usage: %s <config.json> <resource> <ttl_ms> [release]\n", argv[0]);
        return 64;
    }
    auto config = redlock::load_config(argv[1]);
    if (!config) {
        std::fprintf(stderr, "%s\n", config.error().what().c_str());
        return 78;
    }
    config->logger = [](redlock::log_level, std::string_view) {};
    auto locks = redlock::client::create(*config);
    if (!locks) return 78;
    redlock::lock_options options;
    options.ttl = std::chrono::milliseconds{std::atoi(argv[3])};
    options.max_wait = std::chrono::seconds{10};
    auto held = locks->acquire(argv[2], options);
    if (!held) {
        std::fprintf(stderr, "%s\n", held.error().message.c_str());
        return 75;
    }
    if (release) return locks->release(*held) ? 0 : 1;  // the client shuts down on return
    std::printf("held %s\n", held->value().c_str());
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::hours{1});
}
