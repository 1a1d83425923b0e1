#pragma once

#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

/// A Lua script and the SHA-1 name Redis gives it. All scripts live in
/// scripts.cpp, so what runs on the nodes can be reviewed in one place.
struct script {
    std::string_view source;
    std::string sha;
};

/// KEYS[1] = lock key, ARGV[1] = value. Deletes the key only if it still holds
/// our value. Returns 1 if deleted, 0 if not held by us.
[[nodiscard]] auto release_script() -> const script&;

/// Every script, for SCRIPT LOAD when a connection is (re)established.
[[nodiscard]] auto all_scripts() -> std::span<const script* const>;

}  // namespace redlock::detail
