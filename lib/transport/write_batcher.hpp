#pragma once

#include "transport/close_callbacks.hpp"
#include "transport/uv_handle.hpp"

#include <uv.h>

#include <functional>
#include <vector>

namespace redlock::detail {

class node_connection;

/// Hands every connection's queued commands to the kernel once per loop turn,
/// with one prepare and one check handle for all the connections of a client,
/// started only in turns where some connection has something to do. Prepare
/// runs before the loop blocks for I/O, check right after the I/O callbacks:
/// whichever comes first runs the connections that asked.
class write_batcher {
public:
    explicit write_batcher(uv_loop_t* loop);
    write_batcher(const write_batcher&) = delete;
    auto operator=(const write_batcher&) -> write_batcher& = delete;
    ~write_batcher() = default;

    /// `connection` has commands to write or failures to deliver this turn:
    /// its on_flush() runs once, before the loop next blocks.
    void request(node_connection& connection);
    /// `connection` is going away: it is not called again.
    void forget(node_connection& connection) noexcept;
    /// Closes both handles, then calls `done` (the object may then be destroyed).
    /// Idempotent: a second call's `done` runs once they are closed.
    void close(std::function<void()> done);

private:
    using prepare_handle = uv_handle<uv_prepare_t, write_batcher>;
    using check_handle = uv_handle<uv_check_t, write_batcher>;

    void run();
    void stop();
    void handle_closed();

    prepare_handle prepare_{*this};
    check_handle check_{*this};
    std::vector<node_connection*> due_;
    std::vector<node_connection*> running_;
    bool started_ = false;
    bool closing_ = false;
    int open_handles_ = 2;
    close_callbacks on_closed_;
};

}  // namespace redlock::detail
