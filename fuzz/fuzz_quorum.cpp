// The quorum arithmetic every operation decides with: detail::quorum_tally fed any order of
// yes / refused / failed outcomes for 1..255 nodes, and detail::validity() over the whole
// range the configuration allows. Checks the invariants the acquisition relies on:
//  - won exactly when a majority (n/2+1) said yes; lost exactly when that became impossible;
//  - a verdict, once reached, never changes;
//  - detail::permit_tally (semaphores): won exactly when a majority granted one same permit,
//    lost exactly when no permit can reach one, and the verdict never changes once known;
//  - validity = ttl - ceil(elapsed) - (ceil(ttl * factor) + floor): every rounding shortens it,
//    it never exceeds ttl - elapsed, and it does not grow as more time elapses.

#include "sansio/permit_tally.hpp"
#include "sansio/quorum_tally.hpp"
#include "sansio/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using redlock::detail::quorum_tally;

/// Reads fixed-size values from the input, zeros once it runs out.
class input {
public:
    input(const std::uint8_t* data, std::size_t size) : data_{data}, size_{size} {}

    template <class T>
    auto take() -> T {
        T value{};
        const std::size_t n = std::min(sizeof value, size_);
        std::memcpy(&value, data_, n);
        data_ += n;
        size_ -= n;
        return value;
    }
    [[nodiscard]] auto left() const -> std::size_t { return size_; }

private:
    const std::uint8_t* data_;
    std::size_t size_;
};

void check_tally(input& in) {
    const std::size_t nodes = 1 + in.take<std::uint8_t>() % 255;
    const std::size_t needed = nodes / 2 + 1;
    if (redlock::detail::quorum(nodes) != needed) __builtin_trap();
    quorum_tally tally{nodes};
    if (tally.current() != quorum_tally::verdict::pending) __builtin_trap();
    quorum_tally::verdict decided = quorum_tally::verdict::pending;
    for (std::size_t i = 0; i < nodes && in.left() > 0; ++i) {
        const auto outcome = in.take<std::uint8_t>() % 3;
        const auto v = outcome == 0 ? tally.yes() : outcome == 1 ? tally.refused() : tally.failed();
        if (v != tally.current()) __builtin_trap();
        const std::size_t yes = tally.yes_count();
        const std::size_t answered = yes + tally.refused_count() + tally.failed_count();
        if (answered != i + 1 || tally.pending() != nodes - answered) __builtin_trap();
        if (tally.answered() != yes + tally.refused_count()) __builtin_trap();
        const bool won = yes >= needed;
        const bool lost = !won && yes + tally.pending() < needed;
        const auto expected = won    ? quorum_tally::verdict::won
                              : lost ? quorum_tally::verdict::lost
                                     : quorum_tally::verdict::pending;
        if (v != expected) __builtin_trap();
        if (decided != quorum_tally::verdict::pending && v != decided) __builtin_trap();
        if (v != quorum_tally::verdict::pending) decided = v;
    }
    // Every node answered: the verdict is known.
    if (tally.pending() == 0 && tally.current() == quorum_tally::verdict::pending) __builtin_trap();
}

void check_permits(input& in) {
    const std::size_t nodes = 1 + in.take<std::uint8_t>() % 15;
    const int permits = 1 + in.take<std::uint8_t>() % 32;
    const std::size_t needed = nodes / 2 + 1;
    redlock::detail::permit_tally tally{nodes, permits};
    std::vector<std::size_t> votes(static_cast<std::size_t>(permits), 0);
    int decided = -2;  // -2: pending, -1: lost, else the permit won
    for (std::size_t i = 0; i < nodes && in.left() > 0; ++i) {
        // One value in three is "no permit" (refused or failed).
        const int answer = static_cast<int>(in.take<std::uint8_t>() % (permits + permits / 2 + 1)) -
                           (permits / 2 + 1);
        const int permit = answer < 0 ? redlock::detail::permit_tally::none : answer;
        tally.answer(permit);
        if (permit >= 0) ++votes[static_cast<std::size_t>(permit)];
        const std::size_t pending = nodes - (i + 1);
        int expected = -2;
        std::size_t best = 0;
        for (std::size_t p = 0; p < votes.size(); ++p) {
            if (votes[p] >= needed && expected == -2) expected = static_cast<int>(p);
            best = std::max(best, votes[p]);
        }
        if (expected == -2 && best + pending < needed) expected = -1;
        const int got = tally.won() ? *tally.won() : tally.lost() ? -1 : -2;
        if (got != expected) __builtin_trap();
        if (decided != -2 && got != decided) __builtin_trap();
        if (got != -2) decided = got;
    }
}

void check_validity(input& in) {
    using std::chrono::milliseconds;
    using std::chrono::nanoseconds;
    // What validate_config allows: integers up to 2^31-1 ms, 0 <= factor < 0.5.
    constexpr std::int64_t max_ms = 2147483647;
    const milliseconds ttl{1 + static_cast<std::int64_t>(in.take<std::uint32_t>() % max_ms)};
    const milliseconds floor{static_cast<std::int64_t>(in.take<std::uint32_t>() % (max_ms + 1))};
    const double factor = static_cast<double>(in.take<std::uint32_t>()) / 4294967296.0 * 0.5;
    // Up to about 12 days of elapsed time, in nanoseconds.
    const nanoseconds elapsed{static_cast<std::int64_t>(in.take<std::uint64_t>() >> 20)};
    const nanoseconds later = elapsed + nanoseconds{in.take<std::uint32_t>()};

    const milliseconds drift = redlock::detail::clock_drift(ttl, factor, floor);
    const double exact = static_cast<double>(ttl.count()) * factor;
    if (static_cast<double>((drift - floor).count()) < exact) __builtin_trap();
    if ((drift - floor).count() > static_cast<std::int64_t>(std::ceil(exact))) __builtin_trap();

    const milliseconds v = redlock::detail::validity(ttl, elapsed, factor, floor);
    const auto elapsed_ms = std::chrono::ceil<milliseconds>(elapsed);
    if (v != ttl - elapsed_ms - drift) __builtin_trap();
    if (v + elapsed_ms > ttl - floor) __builtin_trap();
    if (redlock::detail::validity(ttl, later, factor, floor) > v) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    input in{data, size};
    check_validity(in);
    while (in.left() > 0) {
        if (in.take<std::uint8_t>() % 2 == 0) {
            check_tally(in);
        } else {
            check_permits(in);
        }
    }
    return 0;
}
