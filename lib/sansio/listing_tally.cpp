// client::list's tally: what the nodes' readings add up to (lock_listing.hpp).

#include "redlock/lock.hpp"
#include "sansio/lock_listing.hpp"

#include <algorithm>
#include <charconv>
#include <compare>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace redlock::detail {
namespace {

// While readers hold a resource its lock key holds this marker rather than a
// holder's value (shared_acquire_source, scripts.cpp): never listed as a lock.
constexpr std::string_view readers_marker = "~readers";

/// One holder of one resource: what the nodes must agree on.
struct holding {
    std::string resource;
    lock_kind kind = lock_kind::exclusive;
    int permit = -1;
    std::string value;
    auto operator<=>(const holding&) const = default;
};

/// The nodes holding it (ascending) and each one's TTL.
struct holders {
    std::vector<std::size_t> nodes;
    std::vector<std::optional<std::chrono::milliseconds>> ttls;
};

/// The `rank`-th longest of `ttls` (0: the longest); a key without a TTL
/// outlasts every other.
auto ranked_ttl(std::vector<std::optional<std::chrono::milliseconds>> ttls, std::size_t rank)
    -> std::optional<std::chrono::milliseconds> {
    std::ranges::sort(ttls, [](const auto& a, const auto& b) {
        if (!a || !b) return !a && b.has_value();  // none first: the longest
        return *a > *b;
    });
    return ttls[std::min(rank, ttls.size() - 1)];
}

auto count_of(const std::optional<std::string>& text) -> std::optional<int> {
    if (!text) return std::nullopt;
    int value = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc{} || end != text->data() + text->size() || value < 1) return std::nullopt;
    return value;
}

}  // namespace

auto tally_listing(std::vector<node_scan> scans, std::size_t quorum) -> lock_listing {
    lock_listing listing;
    listing.quorum = quorum;
    std::map<holding, holders> held;
    std::map<std::string, std::uint64_t> fences;
    std::map<std::string, int> permit_counts;
    const auto add = [&](holding h, std::size_t node,
                         std::optional<std::chrono::milliseconds> ttl) {
        auto& where = held[std::move(h)];
        if (!where.nodes.empty() && where.nodes.back() == node) return;
        where.nodes.push_back(node);
        where.ttls.push_back(ttl);
    };
    for (std::size_t j = 0; j < scans.size(); ++j) {
        std::set<std::string> seen;  // SCAN may return a key twice
        for (auto& r : scans[j].readings) {
            if (!seen.insert(r.key.name).second) continue;
            const std::string& resource = r.key.resource;
            switch (r.key.role) {
                case key_role::lock:
                    if (r.fence) {
                        auto& f = fences[resource];
                        f = std::max(f, *r.fence);
                    }
                    if (r.value && *r.value != readers_marker)
                        add({resource, lock_kind::exclusive, -1, *r.value}, j, r.ttl);
                    break;
                case key_role::readers:
                    for (auto& reader : r.readers)
                        add({resource, lock_kind::shared, -1, reader.value}, j, reader.ttl);
                    break;
                case key_role::permit:
                    if (r.value)
                        add({resource, lock_kind::permit, r.key.permit, *r.value}, j, r.ttl);
                    break;
                case key_role::permits:
                    if (const auto k = count_of(r.value)) {
                        auto& c = permit_counts[resource];
                        c = std::max(c, *k);
                    }
                    break;
            }
        }
    }
    for (auto& [h, where] : held) {
        listed_lock l;
        l.resource = h.resource;
        l.kind = h.kind;
        l.value = h.value;
        l.holder = std::string{holder_of(h.value)};
        if (h.kind == lock_kind::permit) {
            l.permit = h.permit;
            if (const auto k = permit_counts.find(h.resource); k != permit_counts.end())
                l.permits = k->second;
        } else if (const auto f = fences.find(h.resource); f != fences.end()) {
            l.fence = f->second;
        }
        for (const std::size_t node : where.nodes) l.held_on.push_back(scans[node].node);
        const bool majority = quorum > 0 && where.nodes.size() >= quorum;
        l.expires_in = ranked_ttl(std::move(where.ttls), majority ? quorum - 1 : 0);
        (majority ? listing.locks : listing.leftovers).push_back(std::move(l));
    }
    listing.complete = !scans.empty();
    for (auto& s : scans) {
        if (!s.complete) {
            listing.complete = false;
            if (!listing.truncated_reason.empty()) listing.truncated_reason += "; ";
            listing.truncated_reason +=
                s.node + ": " +
                (s.detail.empty() ? std::string{"not scanned to the end"} : s.detail);
        }
        listing.nodes.push_back(
            {std::move(s.node), s.reachable, s.complete, std::move(s.detail), s.keys, s.rounds});
    }
    return listing;
}

}  // namespace redlock::detail
