#include "support/port_holder.hpp"

#include "support/loopback.hpp"

#include <netinet/in.h>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace redlock_test {

port_holder::port_holder(std::uint16_t port) : fd_{::socket(AF_INET, SOCK_STREAM, 0)} {
    sockaddr_in address = loopback(port);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        if (fd_ >= 0) ::close(fd_);
        throw std::runtime_error("cannot hold port " + std::to_string(port));
    }
}

port_holder::~port_holder() {
    if (fd_ >= 0) ::close(fd_);
}

}  // namespace redlock_test
