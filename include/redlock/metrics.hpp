#pragma once

// Metrics of a client (client::metrics()) and their rendering in the
// Prometheus text exposition format (to_prometheus). README, "Metrics",
// documents every metric.

#include "redlock/export.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// Upper bounds of the latency histograms' buckets, in seconds: log-spaced
/// (1, 2.5, 5 per decade) from 100 µs, a loopback round trip, to 10 s, beyond
/// any sensible wait. Fixed, so that histograms of different clients and
/// processes add up bucket by bucket.
inline constexpr std::array<double, 16> latency_buckets{
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};

/// One latency histogram. `counts[i]` is the number of observations in bucket
/// i alone (not cumulative): at most latency_buckets[i] seconds and above the
/// bound before; the last element counts those above 10 s.
struct histogram_snapshot {
    std::array<std::uint64_t, latency_buckets.size() + 1> counts{};
    double sum_seconds = 0;
    /// Observations, the sum of `counts`.
    [[nodiscard]] auto count() const noexcept -> std::uint64_t {
        std::uint64_t n = 0;
        for (const auto c : counts) n += c;
        return n;
    }
};

/// How an acquisition ended, for its latency: the acquire histogram has one
/// series per outcome (the label outcome="ok" etc.).
enum class acquire_outcome : std::uint8_t {
    ok,           ///< granted
    contended,    ///< errc::contended: held by another owner
    unreachable,  ///< errc::quorum_unreachable: too few nodes answered
    other,        ///< any other error: cancelled, validity_expired, invalid_argument, ...
};
inline constexpr std::size_t acquire_outcome_count = 4;
/// "ok", "contended", "unreachable", "other".
[[nodiscard]] REDLOCK_API auto to_string(acquire_outcome o) noexcept -> std::string_view;

/// One node's connection and its requests' failures.
struct node_metrics {
    std::string node;  ///< as configured: "host:port" or a Unix socket path
    /// Connected and past its handshake (client_stats::nodes_connected).
    bool up = false;
    /// Smoothed round-trip time of lock commands, in seconds: from queueing a
    /// command to reading its reply (the rest of the loop turn included), one
    /// sample per node at most every 100 ms, averaged as TCP does (new =
    /// 7/8 old + 1/8 sample). 0 until the first sample.
    double rtt_seconds = 0;
    std::uint64_t timeouts = 0;  ///< requests that missed request_timeout
    /// Requests failed without an answer: the node was not connected, or the
    /// connection dropped before the reply.
    std::uint64_t unreachable = 0;
    /// Error replies (a NOSCRIPT, answered by sending the script, is not one).
    std::uint64_t error_replies = 0;
    std::uint64_t connects = 0;  ///< handshakes answered: connections (re)established
    /// Steps of the node's clock seen (its TIME against the local monotonic
    /// clock, at handshakes and renewals): each quarantined the node.
    std::uint64_t clock_steps = 0;
    /// Locks granted without this node: its grant failed (an error, a timeout, not
    /// reachable) while a majority granted. The first is also logged as a warning.
    std::uint64_t grants_missed = 0;
};

/// A snapshot of a client's metrics (client::metrics()). Each value is read
/// atomically, the whole is not: taken while operations run, a histogram's
/// buckets and sum may be one observation apart.
struct metrics_snapshot {
    /// Acquisitions, from the start of their first attempt (after any wait
    /// for max_concurrent_acquisitions) to their result; indexed by
    /// acquire_outcome.
    std::array<histogram_snapshot, acquire_outcome_count> acquire;
    /// Releases sent to the nodes, from the call reaching the loop to the
    /// report (a majority deleted, or none can).
    histogram_snapshot release;
    /// Extends, the watchdog's renewals included, from sending to the result.
    histogram_snapshot extend;
    /// Acquisitions that did not get the lock at their first attempt (they
    /// waited or retried), from their start to their result, granted or not.
    histogram_snapshot wait;
    std::vector<node_metrics> nodes;
    /// Locks this client was granted that are not released, lost, or dropped
    /// (their last handle destroyed). A lock left to expire while a handle
    /// still refers to it counts until the handle goes.
    std::int64_t locks_held = 0;
    std::uint64_t renewals = 0;    ///< automatic extensions that succeeded
    std::uint64_t locks_lost = 0;  ///< auto-renewed locks given up
    std::uint64_t handoffs = 0;    ///< acquisitions granted by a release handing over
    std::uint64_t attempts = 0;    ///< acquisition attempts (rounds of requests)
    std::size_t waiters = 0;       ///< acquisitions waiting for a release notification
};

/// Renders `m` in the Prometheus text exposition format (version 0.0.4):
/// every metric with its HELP and TYPE lines, named `<prefix>_...` with
/// units in the name (seconds) and counters ending in _total. Characters of
/// `prefix` not allowed in a metric name become '_'; label values are escaped.
[[nodiscard]] REDLOCK_API auto to_prometheus(const metrics_snapshot& m,
                                             std::string_view prefix = "redlock") -> std::string;

}  // namespace redlock
