// The member functions of the value types in redlock/config.hpp: how an error
// and a node address read as text. Kept apart from the JSON reader because
// validate_config and client::create report through them too.

#include "redlock/config.hpp"

#include <ostream>
#include <string>

namespace redlock {

auto config_error::what() const -> std::string {
    std::string text;
    if (!file.empty()) text += file + ": ";
    if (!field.empty()) text += field + ": ";
    text += message;
    return text;
}

auto to_string(const config_error& e) -> std::string {
    return e.what();
}

auto operator<<(std::ostream& os, const config_error& e) -> std::ostream& {
    return os << e.what();
}

auto node_address::to_string() const -> std::string {
    if (is_unix()) return "unix:" + unix_path;
    // An IPv6 literal is bracketed so that the port stays unambiguous.
    if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
    return host + ":" + std::to_string(port);
}

}  // namespace redlock
