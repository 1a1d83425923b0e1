#pragma once

// What clients sent a server, from its INFO commandstats (which, unlike
// MONITOR, also counts CONFIG). The commands a script runs are counted there
// too (as cmdstat_set and so on): with scripts, only EVAL and EVALSHA name
// what a client sent.

#include "support/redis_server.hpp"

#include <string>
#include <string_view>

namespace redlock_test {

/// The text of `server`'s INFO commandstats ("" if it did not answer).
inline auto command_stats(const redis_server& server) -> std::string {
    return server.command({"INFO", "commandstats"}).value_or("");
}

/// Calls of `name` (a cmdstat_ suffix such as "evalsha" or "script|exists")
/// since the last CONFIG RESETSTAT, 0 when never called, in `stats`.
inline auto command_calls(const std::string& stats, std::string_view name) -> long long {
    const std::string field = "cmdstat_" + std::string{name} + ":calls=";
    const auto at = stats.find(field);
    if (at == std::string::npos) return 0;
    return std::stoll(stats.substr(at + field.size()));
}

}  // namespace redlock_test
