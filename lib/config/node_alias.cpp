#include "config/node_alias.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cstring>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <string_view>
#include <sys/socket.h>

namespace redlock::detail {
namespace {

auto v4_mapped(const in_addr& v4) -> ip_address {
    ip_address ip;
    ip.bytes[10] = 0xff;
    ip.bytes[11] = 0xff;
    std::memcpy(ip.bytes.data() + 12, &v4, sizeof v4);
    return ip;
}

auto loopback_v4() -> ip_address {
    in_addr v4{};
    v4.s_addr = htonl(INADDR_LOOPBACK);
    return v4_mapped(v4);
}

auto loopback_v6() -> ip_address {
    ip_address ip;
    ip.bytes[15] = 1;
    return ip;
}

/// `host` read the way the connection's resolver reads a numeric host, but
/// with AI_NUMERICHOST, which never looks a name up. Every spelling it
/// accepts is covered: "::1" and "0:0:0:0:0:0:0:1", and the old IPv4 forms
/// such as "127.1", which the connection would accept too.
auto numeric_address(const std::string& host) -> std::optional<ip_address> {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr)
        return std::nullopt;
    const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner{found, &::freeaddrinfo};
    if (found->ai_family == AF_INET && found->ai_addrlen >= sizeof(sockaddr_in)) {
        sockaddr_in v4{};
        std::memcpy(&v4, found->ai_addr, sizeof v4);
        return v4_mapped(v4.sin_addr);
    }
    if (found->ai_family == AF_INET6 && found->ai_addrlen >= sizeof(sockaddr_in6)) {
        sockaddr_in6 v6{};
        std::memcpy(&v6, found->ai_addr, sizeof v6);
        ip_address ip;
        std::memcpy(ip.bytes.data(), &v6.sin6_addr, ip.bytes.size());
        ip.scope = v6.sin6_scope_id;
        return ip;
    }
    return std::nullopt;
}

/// Host names are case-insensitive (RFC 4343), and a final dot only marks
/// the name as fully qualified.
auto canonical_host(std::string_view host) -> std::string {
    if (host.size() > 1 && host.back() == '.') host.remove_suffix(1);
    std::string name{host};
    std::ranges::transform(name, name.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return name;
}

/// Only what is certain without the file system: "//" is "/" and "." is
/// nothing. ".." stays: after a symbolic link it does not lead back to the
/// component before it.
auto canonical_path(std::string_view path) -> std::string {
    std::string name;
    while (!path.empty()) {
        const auto slash = path.find('/');
        const std::string_view part = path.substr(0, slash);
        if (!part.empty() && part != ".") {
            // Not `"/" + std::string{part}`: GCC 12 at -O2 raises a false
            // -Wrestrict in the insert that operator+ inlines.
            name.push_back('/');
            name.append(part);
        }
        if (slash == std::string_view::npos) break;
        path.remove_prefix(slash + 1);
    }
    return name.empty() ? "/" : name;
}

/// The names that resolve to a loopback address on any usual /etc/hosts.
/// "localhost" may give 127.0.0.1 or ::1 first (the connection uses the
/// first), so it is an alias of both; 127.0.0.2 is another address, on which
/// another server may listen.
struct loopback_name {
    std::string_view name;
    std::string_view meaning;
    bool v4;
};
constexpr std::array loopback_names{
    loopback_name{"localhost", "the loopback address 127.0.0.1 or ::1", true},
    loopback_name{"ip6-localhost", "the loopback address ::1", false},
    loopback_name{"ip6-loopback", "the loopback address ::1", false},
};

auto shares_address(const node_identity& a, const node_identity& b) -> bool {
    return std::ranges::any_of(a.addresses, [&](const ip_address& ip) {
        return std::ranges::find(b.addresses, ip) != b.addresses.end();
    });
}

auto describe(const node_identity& n) -> std::string {
    return n.address.host + " is " + n.loopback;
}

}  // namespace

auto identify(const node_address& node) -> node_identity {
    node_identity id{node, {}, {}, {}};
    if (node.is_unix()) {
        id.name = canonical_path(node.unix_path);
        return id;
    }
    id.name = canonical_host(node.host);
    if (auto ip = numeric_address(node.host)) {
        id.addresses.push_back(*ip);
        return id;
    }
    for (const auto& known : loopback_names) {
        if (id.name != known.name) continue;
        id.loopback = known.meaning;
        if (known.v4) id.addresses.push_back(loopback_v4());
        id.addresses.push_back(loopback_v6());
    }
    return id;
}

auto alias_reason(const node_identity& a, const node_identity& b) -> std::optional<std::string> {
    const node_address& x = a.address;
    const node_address& y = b.address;
    if (x.is_unix() != y.is_unix()) return std::nullopt;  // only the run_id can tell
    if (x.is_unix()) {
        if (a.name != b.name) return std::nullopt;
        return x.unix_path + " and " + y.unix_path + " are one path";
    }
    if (x.port != y.port) return std::nullopt;
    if (a.name == b.name) return "host names ignore case and a final dot";
    if (!shares_address(a, b)) return std::nullopt;
    if (!a.loopback.empty() && !b.loopback.empty()) return describe(a) + ", " + describe(b);
    if (!a.loopback.empty()) return describe(a);
    if (!b.loopback.empty()) return describe(b);
    return x.host + " and " + y.host + " are one address";
}

}  // namespace redlock::detail
