#include "operations/node_port.hpp"

#include "transport/node_connection.hpp"

namespace redlock::detail {

auto node_port::send(std::string_view encoded, reply_sink* sink, std::uint32_t tag) const
    -> std::uint32_t {
    return connection_->send(encoded, sink, tag);
}

auto node_port::disown(std::uint32_t number, const reply_sink* sink) const noexcept -> bool {
    return connection_->disown(number, sink);
}

auto node_port::name() const noexcept -> const std::string& {
    return connection_->name();
}

auto node_port::quarantined_until() const noexcept -> std::chrono::steady_clock::time_point {
    return connection_->quarantined_until();
}

}  // namespace redlock::detail
