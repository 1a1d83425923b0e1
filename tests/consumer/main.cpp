// Links against the installed library and exercises it end to end without a
// server: a node nobody listens on makes acquire fail with quorum_unreachable.
// Errors are printed with the library's operator<< (declared in the installed
// headers, defined in the installed library), so that the check covers them.
#include <redlock/redlock.hpp>

#include <iostream>
#include <string>

int main() {
    const auto bad = redlock::parse_config("{}", "consumer.json");
    if (bad) {
        std::cerr << "consumer: an empty config was accepted\n";
        return 1;
    }
    std::cout << "consumer: parse_config said: " << bad.error() << '\n';

    redlock::client_config config;
    config.nodes.push_back({"127.0.0.1", 1, {}});  // port 1: nothing listens there
    config.logger = [](redlock::log_level, std::string_view) {};
    auto client = redlock::client::create(config);
    if (!client) {
        std::cerr << "consumer: create failed: " << client.error() << '\n';
        return 1;
    }
    auto lock = client->acquire("consumer-check", {.ttl = {}, .attempts = 1, .max_wait = {}});
    if (lock || lock.error().code != redlock::errc::quorum_unreachable) {
        std::cerr << "consumer: expected " << redlock::errc::quorum_unreachable << '\n';
        return 1;
    }
    if (redlock::to_string(lock.error()).rfind("quorum_unreachable: ", 0) != 0) {
        std::cerr << "consumer: to_string(error) does not start with the code's name\n";
        return 1;
    }
    std::cout << "consumer: find_package(redlock) works; acquire said: " << lock.error() << '\n';
    return 0;
}
