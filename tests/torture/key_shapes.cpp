#include "key_shapes.hpp"

#include <algorithm>

namespace redlock_torture {

auto shape_name(key_shape shape) noexcept -> const char* {
    switch (shape) {
        case key_shape::lock:
            return "lock";
        case key_shape::reader_set:
            return "reader set";
        case key_shape::permit:
            return "permit";
        case key_shape::permit_count:
            return "permit count";
        case key_shape::queue:
            return "queue";
        case key_shape::liveness:
            return "waiters' liveness";
        case key_shape::leader:
            return "leader";
        case key_shape::observers:
            return "observers";
        case key_shape::unknown:
            break;
    }
    return "unknown";
}

auto shape_of(std::string_view key, const key_layout& layout) -> std::optional<key_shape> {
    const bool queued = key.starts_with(layout.queue_prefix);
    if (!queued && !key.starts_with(layout.key_prefix)) return std::nullopt;
    key.remove_prefix(queued ? layout.queue_prefix.size() : layout.key_prefix.size());
    // The tagged resource "{R}", then the suffix that names the key's part of the lock.
    const auto close = key.find('}');
    if (!key.starts_with('{') || close == std::string_view::npos || close == 1)
        return key_shape::unknown;
    const std::string_view rest = key.substr(close + 1);
    if (queued) {
        if (rest.empty() || rest == "|permits") return key_shape::queue;
        // The offers beside the queue (README, "The hand-off") live as long as the liveness hash.
        if (rest == "|live" || rest == "|permits|live" || rest == "|offer" ||
            rest == "|permits|offer")
            return key_shape::liveness;
        return key_shape::unknown;
    }
    if (rest.empty()) return key_shape::lock;
    if (rest == "|readers") return key_shape::reader_set;
    if (rest == "|permits") return key_shape::permit_count;
    if (rest == "|leader") return key_shape::leader;
    if (rest == "|observers") return key_shape::observers;
    if (rest.starts_with("|permit|") && rest.size() > 8 &&
        std::all_of(rest.begin() + 8, rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return key_shape::permit;
    return key_shape::unknown;
}

auto leak_reason(key_shape shape, std::int64_t pttl_ms, const leftover_limits& limits)
    -> std::optional<std::string> {
    if (pttl_ms == -2) return std::nullopt;  // expired between KEYS and PTTL
    std::int64_t bound = 0;                  // 0: must not be there at all
    switch (shape) {
        case key_shape::leader:
            return std::nullopt;  // no TTL, by design
        case key_shape::permit_count:
            bound = limits.longest_ttl_ms;
            break;
        case key_shape::queue:
        case key_shape::liveness:
            bound = limits.waiter_ttl_ms;
            break;
        case key_shape::observers:
            bound = limits.observer_ttl_ms;
            break;
        case key_shape::unknown:
            return std::string{"a key of no known shape"};
        default:
            return std::string{"a "} + shape_name(shape) + " key still there after every release";
    }
    if (pttl_ms < 0) return std::string{"a "} + shape_name(shape) + " key without a TTL";
    if (pttl_ms > bound) {
        return std::string{"a "} + shape_name(shape) + " key with " + std::to_string(pttl_ms) +
               " ms to live, above the " + std::to_string(bound) + " ms it can have been given";
    }
    return std::nullopt;
}

}  // namespace redlock_torture
