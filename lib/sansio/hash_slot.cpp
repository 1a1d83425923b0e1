#include "sansio/hash_slot.hpp"

#include <array>

namespace redlock::detail {
namespace {

// CRC16/XMODEM (polynomial 0x1021, initial 0), Redis's cluster CRC.
constexpr auto make_crc_table() -> std::array<std::uint16_t, 256> {
    std::array<std::uint16_t, 256> table{};
    for (unsigned i = 0; i < 256; ++i) {
        auto crc = static_cast<std::uint16_t>(i << 8);
        for (int bit = 0; bit < 8; ++bit) {
            crc =
                static_cast<std::uint16_t>((crc & 0x8000U) != 0 ? (crc << 1) ^ 0x1021U : crc << 1);
        }
        table[i] = crc;
    }
    return table;
}

constexpr auto crc_table = make_crc_table();

auto crc16(std::string_view text) noexcept -> std::uint16_t {
    std::uint16_t crc = 0;
    for (const char c : text) {
        const auto byte = static_cast<std::uint8_t>(c);
        crc = static_cast<std::uint16_t>((crc << 8) ^ crc_table[((crc >> 8) ^ byte) & 0xFFU]);
    }
    return crc;
}

}  // namespace

auto hash_tag_of(std::string_view key) noexcept -> std::string_view {
    const auto open = key.find('{');
    if (open == std::string_view::npos) return key;
    const auto close = key.find('}', open + 1);
    if (close == std::string_view::npos || close == open + 1) return key;
    return key.substr(open + 1, close - open - 1);
}

auto key_slot(std::string_view key) noexcept -> std::uint16_t {
    return static_cast<std::uint16_t>(crc16(hash_tag_of(key)) & (cluster_slots - 1));
}

auto has_own_hash_tag(std::string_view resource) noexcept -> bool {
    return hash_tag_of(resource).size() != resource.size();
}

auto taggable(std::string_view resource) noexcept -> bool {
    return has_own_hash_tag(resource) || (!resource.empty() && resource.front() != '}');
}

auto resource_slot(std::string_view resource) noexcept -> std::uint16_t {
    if (has_own_hash_tag(resource)) return key_slot(resource);
    // "{resource}": the tag runs to the first '}' (taggable: not at the start).
    const std::string_view tag = resource.substr(0, resource.find('}'));
    return static_cast<std::uint16_t>(crc16(tag) & (cluster_slots - 1));
}

auto tagged_resource(std::string_view resource) -> std::string {
    if (has_own_hash_tag(resource)) return std::string{resource};
    std::string out;
    out.reserve(resource.size() + 2);
    out.push_back('{');
    out.append(resource);
    out.push_back('}');
    return out;
}

auto untagged_resource(std::string_view tagged) -> std::string {
    if (tagged.size() > 2 && tagged.front() == '{' && tagged.back() == '}') {
        const std::string_view inner = tagged.substr(1, tagged.size() - 2);
        if (inner.find_first_of("{}") == std::string_view::npos) return std::string{inner};
    }
    return std::string{tagged};
}

}  // namespace redlock::detail
