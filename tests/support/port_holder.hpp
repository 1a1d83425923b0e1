#pragma once

#include <cstdint>

namespace redlock_test {

/// Keeps a crashed node's port from being taken by a server of another test running in
/// parallel: bound on 127.0.0.1 without SO_REUSEADDR and never listening, so a connect to
/// it is refused, as to the crashed node, and redis cannot bind it. Throws
/// std::runtime_error if the port cannot be bound.
class port_holder {
public:
    explicit port_holder(std::uint16_t port);
    port_holder(const port_holder&) = delete;
    auto operator=(const port_holder&) -> port_holder& = delete;
    ~port_holder();

private:
    int fd_ = -1;
};

}  // namespace redlock_test
