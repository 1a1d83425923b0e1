#pragma once

// The recording side of client::metrics(): histograms and per-node counters
// written on the loop thread with relaxed atomics (no allocation, no lock),
// read from any thread into a metrics_snapshot.

#include "redlock/metrics.hpp"
#include "sansio/reply.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace redlock::detail {

/// latency_buckets in nanoseconds, so that recording compares integers.
inline constexpr auto latency_bucket_ns = [] {
    std::array<std::int64_t, latency_buckets.size()> ns{};
    for (std::size_t i = 0; i < ns.size(); ++i)
        ns[i] = static_cast<std::int64_t>(latency_buckets[i] * 1e9 + 0.5);
    return ns;
}();

/// A latency histogram. One writer (the loop thread), any number of readers.
class latency_histogram {
public:
    /// A few comparisons and two relaxed increments: cheap enough for every
    /// operation (a lock cycle records two of these).
    void record(std::chrono::nanoseconds d) noexcept {
        const std::int64_t ns = d.count() > 0 ? d.count() : 0;
        std::size_t i = 0;
        while (i < latency_bucket_ns.size() && ns > latency_bucket_ns[i]) ++i;
        counts_[i].fetch_add(1, std::memory_order_relaxed);
        sum_ns_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
    }
    [[nodiscard]] auto snapshot() const noexcept -> histogram_snapshot {
        histogram_snapshot s;
        for (std::size_t i = 0; i < counts_.size(); ++i)
            s.counts[i] = counts_[i].load(std::memory_order_relaxed);
        s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
        return s;
    }

private:
    std::array<std::atomic<std::uint64_t>, latency_buckets.size() + 1> counts_{};
    std::atomic<std::uint64_t> sum_ns_{0};
};

/// The client-wide histograms (op_counters::latency).
struct latency_histograms {
    std::array<latency_histogram, acquire_outcome_count> acquire;
    latency_histogram release;
    latency_histogram extend;
    latency_histogram wait;
};

/// One node's counters (node_connection::metrics()).
class node_counters {
public:
    std::atomic<std::uint64_t> timeouts{0};
    std::atomic<std::uint64_t> unreachable{0};
    std::atomic<std::uint64_t> error_replies{0};
    std::atomic<std::uint64_t> connects{0};
    std::atomic<std::uint64_t> clock_steps{0};  ///< TIME answers that showed a step (node_trust)
    std::atomic<bool> up{false};

    /// Request `number` was queued at loop time `loop_ms`: sampled for the
    /// RTT when no sample is in flight and the last ended 100 ms ago or more,
    /// so a busy node costs one clock read per 100 ms, not one per request.
    void on_sent(std::uint32_t number, std::uint64_t loop_ms) noexcept {
        if (sampling_ || loop_ms < next_sample_ms_) return;
        sampling_ = true;
        sample_number_ = number;
        sample_start_ = std::chrono::steady_clock::now();
        next_sample_ms_ = loop_ms + 100;
    }
    /// Request `number` was answered (or its slot dropped, answered or not).
    void on_answered(std::uint32_t number, bool replied) noexcept {
        if (!sampling_) return;
        const auto ahead = static_cast<std::int32_t>(number - sample_number_);
        if (ahead < 0) return;  // an older request: the sample is still in flight
        sampling_ = false;
        if (ahead > 0 || !replied) return;  // the sample's slot went without its reply
        const auto rtt = std::chrono::steady_clock::now() - sample_start_;
        const auto sample = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(rtt).count());
        const std::uint64_t old = rtt_ns_.load(std::memory_order_relaxed);
        rtt_ns_.store(old == 0 ? sample : old - old / 8 + sample / 8, std::memory_order_relaxed);
    }
    /// A routed member's answer it could not give: a timeout, no connection, an error reply.
    void count_failure(const reply_event& event) noexcept {
        if (event.status == request_status::timeout) {
            timeouts.fetch_add(1, std::memory_order_relaxed);
        } else if (event.status == request_status::unreachable) {
            unreachable.fetch_add(1, std::memory_order_relaxed);
        } else if (is_error(event.answer)) {
            error_replies.fetch_add(1, std::memory_order_relaxed);
        }
    }
    /// The connection failed: its requests go unanswered, the sample with them.
    void drop_sample() noexcept { sampling_ = false; }

    [[nodiscard]] auto rtt_seconds() const noexcept -> double {
        return static_cast<double>(rtt_ns_.load(std::memory_order_relaxed)) / 1e9;
    }

private:
    std::atomic<std::uint64_t> rtt_ns_{0};  // smoothed; 0 before the first sample
    // Loop thread only.
    std::chrono::steady_clock::time_point sample_start_{};
    std::uint64_t next_sample_ms_ = 0;
    std::uint32_t sample_number_ = 0;
    bool sampling_ = false;
};

}  // namespace redlock::detail
