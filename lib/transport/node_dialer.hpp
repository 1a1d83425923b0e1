#pragma once

#include "redlock/config.hpp"
#include "sansio/connection_fsm.hpp"
#include "transport/uv_handle.hpp"

#include <uv.h>

#include <cstddef>
#include <vector>

namespace redlock::detail {

/// A node connection's stream: TCP, or a Unix socket.
union stream_storage {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
};

/// Where a node_dialer reports what libuv answered, as the state machine's
/// inputs: resolved, resolve_failed, connect_ok, connect_failed.
class dial_listener {
public:
    virtual void on_dialed(connection_fsm::input in) = 0;

protected:
    dial_listener() = default;
    dial_listener(const dial_listener&) = default;
    auto operator=(const dial_listener&) -> dial_listener& = default;
    ~dial_listener() = default;
};

/// Finds a node's addresses and connects a stream to one of them. It decides
/// nothing: connection_fsm says when to resolve and which address to try.
/// A host given as an address (or a Unix socket path) needs no resolver.
/// Every answer is reported, never inside the call that asked for it except
/// a request libuv refused at once.
class node_dialer {
public:
    /// `address` and `listener` outlive this.
    node_dialer(uv_loop_t* loop, const node_address& address, dial_listener& listener);
    node_dialer(const node_dialer&) = delete;
    auto operator=(const node_dialer&) -> node_dialer& = delete;
    ~node_dialer() = default;

    /// The host is a name: resolve() must find its addresses first.
    [[nodiscard]] auto needs_resolver() const noexcept -> bool { return needs_resolver_; }

    /// Looks the host name up (asynchronously).
    void resolve();
    /// Gives up on the look-up in flight: it is answered as failed.
    void cancel_resolve() noexcept;
    /// Initialises a stream for the node's kind of address (the stream
    /// handle's init, see uv_handle::open).
    auto init_stream(stream_storage* stream) const noexcept -> int;
    /// Connects the initialised `stream` to resolved address `index`.
    void connect(stream_storage* stream, std::size_t index);

private:
    using resolve_request = uv_request<uv_getaddrinfo_t, node_dialer>;
    using connect_request = uv_request<uv_connect_t, node_dialer>;
    static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result);
    static void on_connect(uv_connect_t* req, int status);

    uv_loop_t* loop_;
    const node_address& address_;
    dial_listener& listener_;
    bool needs_resolver_ = false;
    std::vector<sockaddr_storage> addresses_;  // resolved (or the numeric one)
    resolve_request resolve_req_{*this};
    connect_request connect_req_{*this};
};

}  // namespace redlock::detail
