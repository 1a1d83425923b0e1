#pragma once

// What Sentinel says about a master, read from replies: its address
// (SENTINEL GET-MASTER-ADDR-BY-NAME) and a switch (+switch-master, pushed).

#include "sansio/reply.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

struct master_address {
    std::string host;
    std::uint16_t port = 0;
    friend auto operator==(const master_address&, const master_address&) -> bool = default;
};

/// GET-MASTER-ADDR-BY-NAME's answer: the address; nullopt with `unknown` set
/// when the sentinel does not know the name (a nil reply), or with `error`
/// set for anything else.
struct master_lookup {
    std::optional<master_address> address;
    bool unknown = false;
    std::string error;
};
[[nodiscard]] auto read_master_address(const reply* r) -> master_lookup;

/// A +switch-master message's payload ("<name> <old ip> <old port> <new ip>
/// <new port>"): the new address when it is about `name`.
[[nodiscard]] auto read_switch_master(std::string_view payload, std::string_view name)
    -> std::optional<master_address>;

}  // namespace redlock::detail
