#pragma once

#include <arpa/inet.h>
#include <cstdint>
#include <netinet/in.h>

namespace redlock_test {

/// 127.0.0.1:`port` as a socket address (port 0: bind picks a free one).
[[nodiscard]] inline auto loopback(std::uint16_t port) -> sockaddr_in {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    return address;
}

}  // namespace redlock_test
