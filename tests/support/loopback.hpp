#pragma once

#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <netinet/in.h>
#include <stdexcept>
#include <string>

namespace redlock_test {

/// 127.0.0.1:`port` as a socket address (port 0: bind picks a free one).
[[nodiscard]] inline auto loopback(std::uint16_t port) -> sockaddr_in {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    return address;
}

/// "<who>: <what>: <errno's text>", for a failed socket call of a test server.
[[nodiscard]] inline auto socket_error(const char* who, const char* what) -> std::runtime_error {
    return std::runtime_error(std::string{who} + ": " + what + ": " + std::strerror(errno));
}

}  // namespace redlock_test
