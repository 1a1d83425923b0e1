#pragma once

#include <string>
#include <string_view>

namespace redlock::detail {

/// Lower-case hex SHA-1 of `text`: the name Redis gives a script (EVALSHA).
/// Used only to name our own Lua scripts, not for security.
[[nodiscard]] auto sha1_hex(std::string_view text) -> std::string;

}  // namespace redlock::detail
