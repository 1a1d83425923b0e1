#pragma once

// Small numbers for a routed member's connections. A request the member sends straight on
// one of them is known to its operation by one 32-bit number: the connection's id here and
// the request's number on that connection (routed_member's direct numbers), so that a
// disown finds it without a table of the member's own.

#include "transport/node_connection.hpp"

#include <array>
#include <cstdint>

namespace redlock::detail {

class route_ids {
public:
    /// Ids are 0..126: 127 is none, so that no direct number is node_connection::no_request.
    static constexpr std::uint8_t none = 127;

    route_ids() = default;
    route_ids(const route_ids&) = delete;
    auto operator=(const route_ids&) -> route_ids& = delete;
    /// Outlives the member's connections (it is the routed_member base's); any left
    /// behind forget this table.
    ~route_ids() {
        for (node_connection* c : slots_) {
            if (c != nullptr) c->set_route(nullptr, UINT8_MAX);
        }
    }

    /// `c`'s id, given at its first use; none when every id is taken (the request then
    /// goes through the member's own table).
    auto id_of(node_connection& c) noexcept -> std::uint8_t {
        if (c.route_id() < none) return c.route_id();
        for (std::uint8_t i = 0; i < none; ++i) {
            if (slots_[i] == nullptr) {
                slots_[i] = &c;
                c.set_route(this, i);
                return i;
            }
        }
        return none;
    }
    /// The connection with id `id`, or null: gone, or never given.
    [[nodiscard]] auto connection(std::uint8_t id) const noexcept -> node_connection* {
        return id < none ? slots_[id] : nullptr;
    }
    /// The connection with id `id` is gone (its destructor says so).
    void forget(std::uint8_t id) noexcept {
        if (id < none) slots_[id] = nullptr;
    }

private:
    std::array<node_connection*, none> slots_{};
};

}  // namespace redlock::detail
