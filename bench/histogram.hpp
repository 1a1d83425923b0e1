#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace redlock::bench {

/// A log-linear histogram of non-negative integers (latencies in nanoseconds),
/// in the manner of HdrHistogram: each power of two is split into
/// 2^sub_bits equal buckets, so every recorded value is known to within
/// 1/2^sub_bits (0.8 %) of itself, from 1 ns up to 2^max_bits ns (18 min),
/// in a fixed 35 KiB whatever the number of samples.
///
/// Threads: record() may be called from several threads at once; the
/// readers (percentile, count, ...) may run concurrently with it and then see
/// a consistent-enough snapshot for a progress line. Exact figures are read
/// once recording has stopped.
class histogram {
public:
    static constexpr unsigned sub_bits = 7;
    static constexpr unsigned max_bits = 40;
    static constexpr std::uint64_t sub_count = std::uint64_t{1} << sub_bits;
    static constexpr std::size_t bucket_count = (max_bits - sub_bits + 1) * sub_count;

    /// The bucket of `v`: values below sub_count have a bucket each; above,
    /// bucket (e - sub_bits + 1, top sub_bits bits after the leading one),
    /// where e is the position of the leading one.
    [[nodiscard]] static constexpr auto index_of(std::uint64_t v) noexcept -> std::size_t {
        if (v >= (std::uint64_t{1} << max_bits)) v = (std::uint64_t{1} << max_bits) - 1;
        if (v < sub_count) return static_cast<std::size_t>(v);
        const unsigned e = static_cast<unsigned>(std::bit_width(v)) - 1;
        const unsigned shift = e - sub_bits;
        return static_cast<std::size_t>((std::uint64_t{shift} + 1) * sub_count +
                                        ((v >> shift) - sub_count));
    }
    /// Smallest value that falls in bucket `i`.
    [[nodiscard]] static constexpr auto lowest_of(std::size_t i) noexcept -> std::uint64_t {
        if (i < sub_count) return i;
        const std::uint64_t shift = i / sub_count - 1;
        return (sub_count + i % sub_count) << shift;
    }
    /// Largest value that falls in bucket `i`.
    [[nodiscard]] static constexpr auto highest_of(std::size_t i) noexcept -> std::uint64_t {
        if (i < sub_count) return i;
        const std::uint64_t shift = i / sub_count - 1;
        return lowest_of(i) + (std::uint64_t{1} << shift) - 1;
    }

    void record(std::uint64_t v) noexcept {
        counts_[index_of(v)].fetch_add(1, std::memory_order_relaxed);
        total_.fetch_add(1, std::memory_order_relaxed);
        sum_.fetch_add(v, std::memory_order_relaxed);
        std::uint64_t m = max_.load(std::memory_order_relaxed);
        while (v > m && !max_.compare_exchange_weak(m, v, std::memory_order_relaxed)) {
        }
        m = min_.load(std::memory_order_relaxed);
        while (v < m && !min_.compare_exchange_weak(m, v, std::memory_order_relaxed)) {
        }
    }

    /// Adds every sample of `other` (which must not be recording meanwhile).
    void merge(const histogram& other) noexcept {
        for (std::size_t i = 0; i < bucket_count; ++i) {
            const std::uint64_t c = other.counts_[i].load(std::memory_order_relaxed);
            if (c != 0) counts_[i].fetch_add(c, std::memory_order_relaxed);
        }
        total_.fetch_add(other.count(), std::memory_order_relaxed);
        sum_.fetch_add(other.sum_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        if (other.count() != 0) {
            if (other.max() > max()) max_.store(other.max(), std::memory_order_relaxed);
            if (other.min() < min()) min_.store(other.min(), std::memory_order_relaxed);
        }
    }

    void reset() noexcept {
        for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
        total_.store(0, std::memory_order_relaxed);
        sum_.store(0, std::memory_order_relaxed);
        max_.store(0, std::memory_order_relaxed);
        min_.store(std::numeric_limits<std::uint64_t>::max(), std::memory_order_relaxed);
    }

    [[nodiscard]] auto count() const noexcept -> std::uint64_t {
        return total_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] auto max() const noexcept -> std::uint64_t {
        return max_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] auto min() const noexcept -> std::uint64_t {
        return count() == 0 ? 0 : min_.load(std::memory_order_relaxed);
    }
    [[nodiscard]] auto mean() const noexcept -> double {
        const std::uint64_t n = count();
        return n == 0 ? 0.0
                      : static_cast<double>(sum_.load(std::memory_order_relaxed)) /
                            static_cast<double>(n);
    }

    /// The value at or below which `q` (0..1) of the samples lie, as the
    /// highest value of its bucket (so never understated by more than the
    /// bucket width) and never above the largest value recorded.
    [[nodiscard]] auto percentile(double q) const noexcept -> std::uint64_t {
        std::uint64_t n = 0;
        for (const auto& c : counts_) n += c.load(std::memory_order_relaxed);
        if (n == 0) return 0;
        auto rank = static_cast<std::uint64_t>(q * static_cast<double>(n) + 0.5);
        if (rank < 1) rank = 1;
        if (rank > n) rank = n;
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < bucket_count; ++i) {
            seen += counts_[i].load(std::memory_order_relaxed);
            if (seen >= rank) {
                const std::uint64_t top = highest_of(i);
                const std::uint64_t m = max();
                return m != 0 && top > m ? m : top;
            }
        }
        return max();
    }

private:
    std::array<std::atomic<std::uint64_t>, bucket_count> counts_{};
    std::atomic<std::uint64_t> total_{0};
    std::atomic<std::uint64_t> sum_{0};
    std::atomic<std::uint64_t> max_{0};
    std::atomic<std::uint64_t> min_{std::numeric_limits<std::uint64_t>::max()};
};

static_assert(histogram::index_of(0) == 0);
static_assert(histogram::index_of(127) == 127);
static_assert(histogram::index_of(128) == 128);
static_assert(histogram::index_of(255) == 255);
static_assert(histogram::index_of(256) == 256);
static_assert(histogram::index_of(257) == 256);
static_assert(histogram::index_of(258) == 257);
static_assert(histogram::lowest_of(histogram::index_of(1'000'000)) <= 1'000'000);
static_assert(histogram::highest_of(histogram::index_of(1'000'000)) >= 1'000'000);
static_assert(histogram::highest_of(histogram::index_of(1'000'000)) -
                  histogram::lowest_of(histogram::index_of(1'000'000)) <
              1'000'000 / histogram::sub_count);
static_assert(histogram::index_of(~std::uint64_t{0}) == histogram::bucket_count - 1);

}  // namespace redlock::bench
