#pragma once

// Whether two configured nodes are one server, judged from how they are
// written alone: no name is resolved and nothing is connected to, so that
// validate_config stays a pure check. What this cannot see (127.0.0.1 and a
// host name resolving to it, a TCP port and the same server's Unix socket) is
// left to client::check, which compares the run_id each node reports.

#include "redlock/config.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

/// An IP address as 16 bytes, IPv4 in its IPv4-mapped IPv6 form: a connection
/// to ::ffff:127.0.0.1 reaches the socket listening on 127.0.0.1. The scope
/// (the interface of a link-local address, fe80::1%eth0) is part of it.
struct ip_address {
    std::array<unsigned char, 16> bytes{};
    std::uint32_t scope = 0;
    friend auto operator==(const ip_address&, const ip_address&) -> bool = default;
};

/// What a node certainly is without a lookup, worked out once per node so
/// that comparing every pair stays cheap.
struct node_identity {
    node_address address;
    /// TCP: the host in lower case without a final dot. Unix: the path with
    /// "//" and "/./" collapsed.
    std::string name;
    /// The address of a numeric host, or the addresses a loopback name may
    /// resolve to; empty for any other name.
    std::vector<ip_address> addresses;
    /// "the loopback address ::1" for a loopback name such as ip6-localhost.
    std::string loopback;
};

[[nodiscard]] auto identify(const node_address& node) -> node_identity;

/// Why `a` and `b` reach the same server whatever the resolver says, e.g.
/// "localhost is the loopback address 127.0.0.1 or ::1"; nullopt when they may
/// be different servers. Equal spellings (host names compared
/// case-insensitively) are aliases too.
[[nodiscard]] auto alias_reason(const node_identity& a, const node_identity& b)
    -> std::optional<std::string>;

}  // namespace redlock::detail
