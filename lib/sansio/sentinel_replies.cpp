#include "sansio/sentinel_replies.hpp"

#include "sansio/cluster_replies.hpp"

#include <vector>

namespace redlock::detail {
auto read_master_address(const reply* r) -> master_lookup {
    master_lookup out;
    if (is_nil(r) || (r != nullptr && r->kind == reply_kind::array && r->elements.empty())) {
        out.unknown = true;
        return out;
    }
    const reply* host = element_of(r, 0);
    const reply* port = element_of(r, 1);
    if (!is_array(r, 2) || host->kind != reply_kind::string || port->kind != reply_kind::string) {
        out.error = "GET-MASTER-ADDR-BY-NAME answered " + describe_reply(r);
        return out;
    }
    const auto p = read_port(port->text);
    if (!p || host->text.empty()) {
        out.error = "GET-MASTER-ADDR-BY-NAME answered an unusable address";
        return out;
    }
    out.address = master_address{std::string{host->text}, *p};
    return out;
}

auto read_switch_master(std::string_view payload, std::string_view name)
    -> std::optional<master_address> {
    std::vector<std::string_view> words;
    while (!payload.empty()) {
        const auto space = payload.find(' ');
        words.push_back(payload.substr(0, space));
        if (space == std::string_view::npos) break;
        payload.remove_prefix(space + 1);
    }
    if (words.size() != 5 || words[0] != name) return std::nullopt;
    const auto port = read_port(words[4]);
    if (!port || words[3].empty()) return std::nullopt;
    return master_address{std::string{words[3]}, *port};
}

}  // namespace redlock::detail
