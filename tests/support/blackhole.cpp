#include "support/blackhole.hpp"

#include "support/loopback.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace redlock_test {
namespace {

constexpr int filler_connections = 3;
constexpr int probe_ms = 100;

auto blackhole_failure(const char* what) -> std::runtime_error {
    return socket_error("blackhole_listener", what);
}

/// A non-blocking connect to `port`, left in whatever state the handshake reaches.
auto start_connect(std::uint16_t port) -> int {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw blackhole_failure("socket");
    auto address = loopback(port);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 &&
        errno != EINPROGRESS) {
        auto failure = blackhole_failure("connect");
        ::close(fd);
        throw failure;
    }
    return fd;
}

}  // namespace

blackhole_listener::blackhole_listener() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ < 0) throw blackhole_failure("socket");
    auto address = loopback(0);
    socklen_t length = sizeof address;
    auto* generic = reinterpret_cast<sockaddr*>(&address);
    if (::bind(listener_, generic, sizeof address) != 0 ||
        ::getsockname(listener_, generic, &length) != 0 || ::listen(listener_, 0) != 0) {
        auto failure = blackhole_failure("bind/listen on 127.0.0.1");
        ::close(listener_);
        throw failure;
    }
    port_ = ntohs(address.sin_port);

    try {
        for (int i = 0; i < filler_connections; ++i) fillers_.push_back(start_connect(port_));
        // The probe: with the queue full, its SYN is dropped and it never becomes writable.
        int probe = start_connect(port_);
        fillers_.push_back(probe);
        pollfd watch{.fd = probe, .events = POLLOUT, .revents = 0};
        if (::poll(&watch, 1, probe_ms) != 0) {
            throw std::runtime_error(
                "blackhole_listener: a connect to 127.0.0.1:" + std::to_string(port_) +
                " with a full accept queue completed or failed within " + std::to_string(probe_ms) +
                " ms: this kernel does not let a connect hang");
        }
    } catch (...) {
        for (int fd : fillers_) ::close(fd);
        ::close(listener_);
        throw;
    }
}

blackhole_listener::~blackhole_listener() {
    for (int fd : fillers_) ::close(fd);
    ::close(listener_);
}

auto blackhole_listener::address() const -> redlock::node_address {
    return redlock::node_address{.host = "127.0.0.1", .port = port_, .unix_path = {}};
}

}  // namespace redlock_test
