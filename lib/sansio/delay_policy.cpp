#include "sansio/delay_policy.hpp"

#include "sansio/node_outcomes.hpp"
#include "sansio/timing.hpp"

#include <algorithm>
#include <array>

namespace redlock::detail {

using std::chrono::milliseconds;

auto reconnect_delay(unsigned failures, std::uint64_t min_ms, std::uint64_t max_ms,
                     std::uint64_t random) noexcept -> std::uint64_t {
    const unsigned shift = std::min(failures > 0 ? failures - 1 : 0U, 16U);
    const std::uint64_t base = std::min(min_ms << shift, std::max(max_ms, min_ms));
    const std::uint64_t half = base / 2;
    return half + (half > 0 ? random % (half + 1) : 0);
}

auto renew_interval(milliseconds ttl, double fraction) noexcept -> milliseconds {
    return std::max(std::chrono::ceil<milliseconds>(ttl * fraction), milliseconds{1});
}

auto wait_delay(const wait_situation& s, milliseconds waiter_ttl, milliseconds request_timeout,
                const client_config::retry_policy& retry, std::uint64_t random) -> milliseconds {
    // Never longer than half the queue entry's life, so it stays alive; a
    // notification usually comes much sooner.
    milliseconds longest = std::max(waiter_ttl / 2, milliseconds{1});
    // Until our subscriptions are confirmed a release could go unheard: check
    // back soon rather than sleep on a notification that may never come.
    if (!s.subscribed) longest = std::min(longest, std::max(request_timeout * 2, milliseconds{10}));
    if (s.reason != errc::contended) return std::min(longest, retry_delay(retry, random));

    const node_outcomes& nodes = *s.nodes;
    // Free now: nodes that granted us (released since) or answered with no key
    // (fair: queued behind someone). A node that timed out or is down is not
    // free: counting it so would make a waiter spin while a holder's node is
    // out (the regression tests/unit/delays_test.cpp pins down).
    std::size_t free_now = 0;
    // Held: the holder's remaining TTL on each node that refused us, soonest
    // first. The usual 3, 5 or 7 nodes sort on the stack.
    std::array<long long, 16> small{};
    std::vector<long long> large;
    std::span<long long> held{small};
    if (nodes.size() > small.size()) {
        large.resize(nodes.size());
        held = large;
    }
    std::size_t held_count = 0;
    std::size_t granted = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const node_status st = nodes.status(i);
        const long long ttl = i < s.holder_ttl.size() ? s.holder_ttl[i] : -2;
        if (st == node_status::ok) ++granted;
        if (st == node_status::refused && ttl == -2) ++free_now;
        if (st == node_status::refused && ttl > 0) held[held_count++] = ttl;
    }
    free_now += s.granted_alike ? std::min(granted, *s.granted_alike) : granted;
    std::sort(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(held_count));
    const std::size_t needed = quorum(nodes.size());
    if (free_now >= needed) {
        // Fair: a live waiter is ahead, and its release will tell us. Otherwise
        // the holder's keys were expiring as we asked: look again shortly.
        return s.mode == wait_mode::fair
                   ? longest
                   : std::min(longest, milliseconds{2} + jitter_of(random, milliseconds{3}));
    }
    if (held_count == 0) return longest;
    const std::size_t k = std::min(needed - free_now, held_count);
    return std::min(longest, milliseconds{held[k - 1] + 1});
}

auto next_attempt(const retry_decision& d, std::chrono::steady_clock::time_point now)
    -> std::optional<milliseconds> {
    if (!d.budget_left) return std::nullopt;
    auto next = now + (d.woken ? milliseconds{0} : d.delay);
    if (d.deadline) {
        // The last attempt starts no later than the deadline, not after it.
        if (now + d.shortest >= *d.deadline) return std::nullopt;
        next = std::min(next, *d.deadline);
    }
    return std::chrono::ceil<milliseconds>(next - now);
}

}  // namespace redlock::detail
