#pragma once

// Whether a node's clock stepped, from its TIME answers and the local
// monotonic clock, with no I/O. Keys expire on the node's wall clock (valkey
// #2651, redis #416): a node whose clock jumps forward expires the keys it
// holds early, and a lock held on a bare majority that counts it is then held
// on a minority without its holder knowing. The connection feeds this every
// TIME it reads (at the handshake and at each renewal) and quarantines the
// node on a step, as after a restart. tests/unit/clock_watch_test.cpp plays
// the cases.
//
// The rule. The node read its clock at some instant between sending TIME and
// reading the answer (the round trip is the uncertainty). Between two
// samples, the node's clock advanced by `node_elapsed`, and the local
// monotonic clock by somewhere between `received - previous.sent` (the most)
// and `sent - previous.received` (the least). The node is fine when
// node_elapsed lies within
//     [least - allowance, most + allowance],
//     allowance = ceil(most * clock_drift_factor) + clock_drift_floor,
// the drift the client already grants every lock's validity (config.hpp),
// prorated to the interval. Beyond it, the clock stepped forward (keys there
// expire early) or backward (keys live longer; a clock that jumps once is
// not trusted until it has kept time for a quarantine).

#include "sansio/reply.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

/// One TIME answer: the node's clock in microseconds since the Unix epoch, and
/// the local monotonic instants the command was sent and its answer read.
struct clock_sample {
    std::int64_t node_us = 0;
    std::chrono::steady_clock::time_point sent;
    std::chrono::steady_clock::time_point received;
};

/// How much a node's clock may disagree with ours per interval (config.hpp's
/// clock_drift_factor and clock_drift_floor).
struct clock_budget {
    double drift_factor = 0.01;
    std::chrono::milliseconds floor{2};
};

struct clock_verdict {
    enum class kind : std::uint8_t {
        first,     ///< nothing to compare with yet: this sample is the reference
        fine,      ///< within the allowance
        forward,   ///< the node's clock jumped ahead: its keys may have expired early
        backward,  ///< the node's clock jumped back
    };
    kind result = kind::first;
    /// forward, backward: by how much beyond what the round trips allow
    /// (at least this much; never negative).
    std::chrono::milliseconds step{0};
    /// The allowance the interval had (for the log line).
    std::chrono::milliseconds allowance{0};

    [[nodiscard]] auto stepped() const noexcept -> bool {
        return result == kind::forward || result == kind::backward;
    }
};

/// A clock step seen on a node, as reports tell it.
struct clock_step_note {
    std::chrono::steady_clock::time_point seen;  ///< when its TIME answer was read
    clock_verdict verdict;
    std::chrono::milliseconds quarantine{0};  ///< its grants do not count for this long (0: off)
    [[nodiscard]] auto describe() const -> std::string;  ///< "its clock stepped 60000 ms forward"
};

/// Judges one sample against another: pure.
[[nodiscard]] auto judge_clock(const clock_sample& previous, const clock_sample& current,
                               const clock_budget& budget) -> clock_verdict;

/// The node's clock across samples: keeps the last one as the reference.
class clock_watch {
public:
    /// Judges `s` against the reference, then makes `s` the reference (after a
    /// step too: the next interval is judged from the new clock). A sample
    /// whose answer came before it was sent, or before the reference's, is
    /// ignored (a caller's mistake; it proves nothing).
    auto observe(const clock_sample& s, const clock_budget& budget) -> clock_verdict;
    /// Forgets the reference: the node behind the address is another one (a
    /// new run_id), whose clock owes nothing to the old one's.
    void reset() noexcept { reference_.reset(); }
    [[nodiscard]] auto reference() const noexcept -> const std::optional<clock_sample>& {
        return reference_;
    }

private:
    std::optional<clock_sample> reference_;
};

/// The TIME reply's two fields (seconds, microseconds) as microseconds; nullopt
/// when they are not two non-negative decimal numbers.
[[nodiscard]] auto time_reply_us(std::string_view seconds, std::string_view micros)
    -> std::optional<std::int64_t>;
/// INFO server's server_time_usec (Redis 6.2 and later): the same clock as TIME's, read by
/// the same command that tells who the node is; nullopt when it is not a decimal number.
[[nodiscard]] auto info_time_us(std::string_view usec) -> std::optional<std::int64_t>;
/// A TIME reply (an array of the two) as microseconds; nullopt for anything else.
[[nodiscard]] auto time_of(const reply* r) -> std::optional<std::int64_t>;

}  // namespace redlock::detail
