// Links against the installed library and exercises it end to end without a
// server: a node nobody listens on makes acquire fail with quorum_unreachable.
#include <redlock/redlock.hpp>

#include <cstdio>

int main() {
    redlock::client_config config;
    config.nodes.push_back({"127.0.0.1", 1, {}});  // port 1: nothing listens there
    config.logger = [](redlock::log_level, std::string_view) {};
    auto client = redlock::client::create(config);
    if (!client) {
        std::fprintf(stderr, "consumer: create failed: %s\n", client.error().message.c_str());
        return 1;
    }
    auto lock = client->acquire("consumer-check", {.ttl = {}, .attempts = 1, .max_wait = {}});
    if (lock || lock.error().code != redlock::errc::quorum_unreachable) {
        std::fprintf(stderr, "consumer: expected quorum_unreachable\n");
        return 1;
    }
    std::printf("consumer: find_package(redlock) works; acquire said: %s\n",
                lock.error().message.c_str());
    return 0;
}
