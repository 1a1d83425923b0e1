// The member functions of the value types in redlock/config.hpp: how an error
// and a node address read as text. Kept apart from the JSON reader because
// validate_config and client::create report through them too.

#include "redlock/config.hpp"

#include <string>

namespace redlock {

auto config_error::what() const -> std::string {
    std::string text;
    if (!file.empty()) text += file + ": ";
    if (!field.empty()) text += field + ": ";
    text += message;
    return text;
}

auto node_address::to_string() const -> std::string {
    if (is_unix()) return "unix:" + unix_path;
    // An IPv6 literal is bracketed so that the port stays unambiguous.
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

}  // namespace redlock
