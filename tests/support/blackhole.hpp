#pragma once

#include <redlock/config.hpp>

#include <cstdint>
#include <vector>

namespace redlock_test {

/// A TCP listener on 127.0.0.1 that never accepts and whose accept queue is full
/// (listen(fd, 0), then a few client connections that are never accepted), so that the
/// kernel drops further SYNs and a connect to it hangs in SYN_SENT instead of failing:
/// an endpoint behind a firewall that drops packets, or a host that vanished.
///
/// The constructor checks that a further connect does hang (it has not completed after
/// 100 ms), and throws std::runtime_error if this kernel completes it anyway.
class blackhole_listener {
public:
    blackhole_listener();
    blackhole_listener(const blackhole_listener&) = delete;
    auto operator=(const blackhole_listener&) -> blackhole_listener& = delete;
    ~blackhole_listener();

    [[nodiscard]] auto port() const noexcept -> std::uint16_t { return port_; }
    /// {"127.0.0.1", port}
    [[nodiscard]] auto address() const -> redlock::node_address;

private:
    int listener_ = -1;
    std::vector<int> fillers_;
    std::uint16_t port_ = 0;
};

}  // namespace redlock_test
