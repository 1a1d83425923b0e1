#pragma once

// How a routed member numbers requests (routed_member.cpp, routed_direct.cpp).

#include <cstdint>

namespace redlock::detail::routed_numbers {

// A connection's tag for one of our requests: its index, what it is, its round.
constexpr std::uint32_t index_mask = (1U << 20) - 1;
constexpr std::uint32_t wait_bit = 1U << 20;
constexpr std::uint32_t asking_bit = 1U << 21;
constexpr int round_shift = 22;
// A request's number for its sender: its index, and its generation above it.
constexpr int generation_shift = 20;
constexpr std::uint32_t generation_mask = 0x7FF;
// A request sent straight on a connection (the usual one) is numbered with this bit set, its
// connection's route id above the low 24 bits of its number there.
constexpr std::uint32_t direct_bit = 1U << 31;
constexpr int route_shift = 24;
constexpr std::uint32_t connection_mask = (1U << route_shift) - 1;

constexpr auto direct_number(std::uint8_t route, std::uint32_t number) -> std::uint32_t {
    return direct_bit | (static_cast<std::uint32_t>(route) << route_shift) |
           (number & connection_mask);
}

constexpr auto inner_tag(std::uint32_t index, std::uint8_t round, std::uint32_t bits)
    -> std::uint32_t {
    return index | bits | (static_cast<std::uint32_t>(round) << round_shift);
}

}  // namespace redlock::detail::routed_numbers
