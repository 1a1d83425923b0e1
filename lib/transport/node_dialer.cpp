#include "transport/node_dialer.hpp"

#include <cstring>
#include <string>

namespace redlock::detail {

node_dialer::node_dialer(uv_loop_t* loop, const node_address& address, dial_listener& listener)
    : loop_{loop}, address_{address}, listener_{listener} {
    if (address_.is_unix()) return;
    sockaddr_storage numeric{};
    if (uv_ip4_addr(address_.host.c_str(), address_.port,
                    reinterpret_cast<sockaddr_in*>(&numeric)) == 0 ||
        uv_ip6_addr(address_.host.c_str(), address_.port,
                    reinterpret_cast<sockaddr_in6*>(&numeric)) == 0) {
        addresses_.push_back(numeric);
    } else {
        needs_resolver_ = true;
    }
}

void node_dialer::resolve() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    const std::string port = std::to_string(address_.port);
    const int rc = uv_getaddrinfo(loop_, resolve_req_.get(), &node_dialer::on_resolved,
                                  address_.host.c_str(), port.c_str(), &hints);
    if (rc != 0) {
        listener_.on_dialed({connection_fsm::event::resolve_failed,
                             "cannot resolve '" + address_.host + "': " + uv_strerror(rc)});
    }
}

void node_dialer::cancel_resolve() noexcept {
    uv_cancel(reinterpret_cast<uv_req_t*>(resolve_req_.get()));
}

void node_dialer::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* result) {
    node_dialer& self = resolve_request::owner_of(req);
    std::string cause;
    if (status == 0 && result != nullptr) {
        self.addresses_.clear();
        for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
            if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
            sockaddr_storage a{};
            std::memcpy(&a, ai->ai_addr, ai->ai_addrlen);
            self.addresses_.push_back(a);
        }
    } else {
        cause = "cannot resolve '" + self.address_.host + "': " + uv_strerror(status);
    }
    uv_freeaddrinfo(result);
    if (self.addresses_.empty() && cause.empty()) {
        cause = "cannot resolve '" + self.address_.host + "': no address";
    }
    if (!cause.empty()) {
        self.listener_.on_dialed({connection_fsm::event::resolve_failed, cause});
    } else {
        self.listener_.on_dialed({connection_fsm::event::resolved, {}, self.addresses_.size()});
    }
}

auto node_dialer::init_stream(stream_storage* stream) const noexcept -> int {
    if (address_.is_unix()) return uv_pipe_init(loop_, &stream->pipe, 0);
    const int rc = uv_tcp_init(loop_, &stream->tcp);
    if (rc == 0) uv_tcp_nodelay(&stream->tcp, 1);
    return rc;
}

void node_dialer::connect(stream_storage* stream, std::size_t index) {
    int rc = 0;
    if (address_.is_unix()) {
        uv_pipe_connect(connect_req_.get(), &stream->pipe, address_.unix_path.c_str(),
                        &node_dialer::on_connect);
    } else {
        rc = uv_tcp_connect(connect_req_.get(), &stream->tcp,
                            reinterpret_cast<const sockaddr*>(&addresses_.at(index)),
                            &node_dialer::on_connect);
    }
    // Queued: it is performed once the actions that asked for this connect are done.
    if (rc != 0) {
        listener_.on_dialed({connection_fsm::event::connect_failed,
                             std::string{"cannot connect: "} + uv_strerror(rc)});
    }
}

void node_dialer::on_connect(uv_connect_t* req, int status) {
    node_dialer& self = connect_request::owner_of(req);
    if (status == UV_ECANCELED) return;  // the stream is closing: the machine knows
    if (status != 0) {
        self.listener_.on_dialed({connection_fsm::event::connect_failed,
                                  std::string{"cannot connect: "} + uv_strerror(status)});
        return;
    }
    self.listener_.on_dialed({connection_fsm::event::connect_ok});
}

}  // namespace redlock::detail
