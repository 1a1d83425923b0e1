#pragma once

// Reading a probe's replies (probe_op's flat_reply): what status, check and the
// operators' tools (diagnostics.cpp, operator_commands.cpp) share.

#include "operations/probe_op.hpp"

#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

/// A string or status reply's text; nothing for any other reply.
[[nodiscard]] inline auto text_of(const flat_reply& r) -> std::optional<std::string> {
    if (r.type == flat_reply::kind::text) return r.text;
    return std::nullopt;
}

/// `text` as a whole unsigned number, or nothing.
[[nodiscard]] inline auto number_of(std::string_view text) -> std::optional<std::uint64_t> {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

/// A PTTL reply: the TTL left, or nothing (-2: no key, -1: no TTL, or an error).
[[nodiscard]] inline auto ttl_of(const flat_reply& r) -> std::optional<std::chrono::milliseconds> {
    if (r.type == flat_reply::kind::integer && r.integer >= 0)
        return std::chrono::milliseconds{r.integer};
    return std::nullopt;
}

/// The first error reply a node gave, or empty.
[[nodiscard]] inline auto first_error(const node_probe& p) -> std::string {
    for (const auto& r : p.replies) {
        if (r.type == flat_reply::kind::error) return r.text;
    }
    return {};
}

}  // namespace redlock::detail
