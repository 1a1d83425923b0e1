#include "sansio/cluster_replies.hpp"

#include <charconv>

namespace redlock::detail {
namespace {

/// One node entry of CLUSTER SLOTS: [host, port, id?, metadata?].
auto read_node(const reply* r, std::string_view asked_host) -> std::optional<cluster_node> {
    const reply* host = element_of(r, 0);
    const auto port = array_integer(r, 1);
    if (host == nullptr || host->kind != reply_kind::string || !port || *port <= 0 || *port > 65535)
        return std::nullopt;
    cluster_node node;
    node.host =
        host->text.empty() || host->text == "?" ? std::string{asked_host} : std::string{host->text};
    node.port = static_cast<std::uint16_t>(*port);
    if (const reply* id = element_of(r, 2); id != nullptr && id->kind == reply_kind::string)
        node.id = std::string{id->text};
    return node;
}

}  // namespace

auto read_port(std::string_view text) -> std::optional<std::uint16_t> {
    unsigned value = 0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || ptr != end || value == 0 || value > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(value);
}

auto cluster_node::address() const -> std::string {
    // Appended piece by piece: GCC 12 at -O3 misreads a chain of operator+ (-Wrestrict).
    const bool v6 = host.find(':') != std::string::npos;
    std::string out;
    out.reserve(host.size() + 8);
    if (v6) out.push_back('[');
    out.append(host);
    if (v6) out.push_back(']');
    out.push_back(':');
    out.append(std::to_string(port));
    return out;
}

void append_slot_range(std::string& out, unsigned first, unsigned last) {
    // Appended piece by piece: GCC 12 at -O3 misreads "-" + std::to_string(n) (-Wrestrict).
    if (!out.empty()) out.append(", ");
    out.append(std::to_string(first));
    if (last == first) return;
    out.push_back('-');
    out.append(std::to_string(last));
}

auto slot_layout::unserved() const -> std::string {
    std::vector<bool> served(16384, false);
    for (const auto& r : ranges)
        for (unsigned s = r.first; s <= r.last; ++s) served[s] = true;
    std::string out;
    for (unsigned s = 0; s < 16384;) {
        if (served[s]) {
            ++s;
            continue;
        }
        unsigned e = s;
        while (e + 1 < 16384 && !served[e + 1]) ++e;
        append_slot_range(out, s, e);
        s = e + 1;
    }
    return out;
}

auto read_cluster_slots(const reply* r, std::string_view asked_host) -> slot_layout {
    slot_layout layout;
    if (r == nullptr || r->kind != reply_kind::array) {
        layout.error = "CLUSTER SLOTS answered " + describe_reply(r);
        return layout;
    }
    for (const reply* entry : r->elements) {
        const auto first = array_integer(entry, 0);
        const auto last = array_integer(entry, 1);
        if (!first || !last || *first < 0 || *last > 16383 || *first > *last) {
            layout.error = "CLUSTER SLOTS: a range is not first..last within 0..16383";
            return layout;
        }
        const auto master = read_node(element_of(entry, 2), asked_host);
        if (!master) {
            layout.error = "CLUSTER SLOTS: slots " + std::to_string(*first) + "-" +
                           std::to_string(*last) + " have no readable master";
            return layout;
        }
        slot_range range{
            static_cast<std::uint16_t>(*first), static_cast<std::uint16_t>(*last), *master, {}};
        for (std::size_t i = 3; i < entry->elements.size(); ++i) {
            if (auto replica = read_node(entry->elements[i], asked_host))
                range.replicas.push_back(std::move(*replica));
        }
        layout.ranges.push_back(std::move(range));
    }
    return layout;
}

auto read_redirection(const reply* r) -> std::optional<redirection> {
    if (!is_error(r)) return std::nullopt;
    std::string_view text = r->text;
    redirection out;
    if (text.starts_with("MOVED ")) {
        out.how = redirection::kind::moved;
        text.remove_prefix(6);
    } else if (text.starts_with("ASK ")) {
        out.how = redirection::kind::ask;
        text.remove_prefix(4);
    } else {
        return std::nullopt;
    }
    const auto space = text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    unsigned slot = 0;
    const auto slot_text = text.substr(0, space);
    const auto [ptr, ec] =
        std::from_chars(slot_text.data(), slot_text.data() + slot_text.size(), slot);
    if (ec != std::errc{} || ptr != slot_text.data() + slot_text.size() || slot > 16383)
        return std::nullopt;
    out.slot = static_cast<std::uint16_t>(slot);
    const std::string_view where = text.substr(space + 1);
    const auto colon = where.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto port = read_port(where.substr(colon + 1));
    if (!port) return std::nullopt;
    out.port = *port;
    std::string_view host = where.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    out.host = std::string{host};
    return out;
}

auto calls_for_refresh(const reply* r) noexcept -> bool {
    if (!is_error(r)) return false;
    return r->text.starts_with("CLUSTERDOWN") || r->text.starts_with("TRYAGAIN") ||
           r->text.starts_with("READONLY");
}

}  // namespace redlock::detail
