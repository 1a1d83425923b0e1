// Serves a client's metrics over HTTP for Prometheus to scrape, while taking
// and releasing locks in a loop so that they move:
//
//     redlock_metrics_http_example [config.json] [port]
//     curl http://127.0.0.1:9464/metrics
//
// The server is the least that Prometheus needs: HTTP/1.0, one request per
// connection, GET /metrics only, on the loopback interface. A real service
// would hand to_prometheus()'s text to the HTTP server it already has.
#include <redlock/redlock.hpp>

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <optional>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;

std::atomic<bool> stopping{false};

void on_signal(int) {
    stopping = true;
}

/// Sends all of `text`, or gives up on this connection.
void send_all(int fd, const std::string& text) {
    std::size_t sent = 0;
    while (sent < text.size()) {
        const ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;
        sent += static_cast<std::size_t>(n);
    }
}

/// Answers one connection: reads the request line, replies, closes.
void serve(int fd, const redlock::client& locks) {
    std::string request;
    char buf[1024];
    // The request line is all we look at; the headers after it are ignored.
    while (request.find("\r\n") == std::string::npos && request.size() < 8192) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        request.append(buf, static_cast<std::size_t>(n));
    }
    const bool metrics =
        request.starts_with("GET /metrics ") || request.starts_with("GET /metrics?");
    const std::string body = metrics ? redlock::to_prometheus(locks.metrics()) : "not found\n";
    const std::string head =
        std::string{metrics ? "HTTP/1.0 200 OK\r\n" : "HTTP/1.0 404 Not Found\r\n"} +
        "Content-Type: " + (metrics ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain") +
        "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    send_all(fd, head + body);
}

/// Listens on 127.0.0.1:`port`; -1 on failure (reported).
auto listen_on(std::uint16_t port) -> int {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
        std::perror("metrics_http: cannot listen");
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "configs/local.json";
    const auto port = static_cast<std::uint16_t>(argc > 2 ? std::atoi(argv[2]) : 9464);
    auto config = redlock::load_config(path);
    if (!config) {
        std::fprintf(stderr, "metrics_http: %s\n", config.error().what().c_str());
        return 78;
    }
    auto locks = redlock::client::create(*config);
    if (!locks) {
        std::fprintf(stderr, "metrics_http: %s\n", locks.error().message.c_str());
        return 78;
    }
    const int listener = listen_on(port);
    if (listener < 0) return 71;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::printf("serving http://127.0.0.1:%u/metrics (Ctrl-C stops)\n",
                static_cast<unsigned>(port));
    std::fflush(stdout);

    // The workload: lock, work a little, release; and one lock kept between
    // rounds of 50, so that the locks_held gauge is not always 0.
    std::thread worker{[&] {
        std::optional<redlock::lock> kept;
        for (int i = 0; !stopping; ++i) {
            if (i % 50 == 0) {
                if (kept) (void)locks->release(*kept);
                auto k = locks->acquire("metrics-example:kept");
                if (k) kept = *k;
            }
            auto held =
                locks->acquire("metrics-example:" + std::to_string(i % 4), {.max_wait = 1s});
            if (held) {
                std::this_thread::sleep_for(5ms);
                (void)locks->release(*held);
            }
            std::this_thread::sleep_for(20ms);
        }
        if (kept) (void)locks->release(*kept);
    }};

    // One connection at a time: a scrape is small, and Prometheus waits.
    while (!stopping) {
        timeval tick{0, 200'000};  // wakes up to notice a signal
        fd_set ready;
        FD_ZERO(&ready);
        FD_SET(listener, &ready);
        if (::select(listener + 1, &ready, nullptr, nullptr, &tick) <= 0) continue;
        const int fd = ::accept(listener, nullptr, nullptr);
        if (fd < 0) continue;
        serve(fd, *locks);
        ::close(fd);
    }
    worker.join();
    ::close(listener);
    return 0;
}
