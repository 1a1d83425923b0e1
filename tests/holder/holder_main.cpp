// A lock holder in its own process, for tests that SIGKILL a holder: it takes
// the lock, says "held <value>" on stdout, and then waits to be killed.
//   redlock_test_holder <config.json> <resource> <ttl_ms>
#include <redlock/redlock.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s <config.json> <resource> <ttl_ms>\n", argv[0]);
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
    std::printf("held %s\n", held->value().c_str());
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::hours{1});
}
