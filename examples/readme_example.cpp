#include <redlock/redlock.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    auto config = redlock::load_config(argc > 1 ? argv[1] : "configs/local.json");
    if (!config) return std::fprintf(stderr, "%s\n", config.error().what().c_str()), 78;
    auto locks = redlock::client::create(*config);
    if (!locks) return std::fprintf(stderr, "%s\n", locks.error().message.c_str()), 78;

    auto held = locks->acquire("invoices:42", {.ttl = std::chrono::seconds{10}});
    if (!held) return std::fprintf(stderr, "not locked: %s\n", held.error().message.c_str()), 75;
    redlock::guard release_on_exit{*locks, *held};  // released when it goes out of scope

    if (held->valid())
        std::printf("locked for %lld ms more\n", static_cast<long long>(held->remaining().count()));
    return 0;
}
