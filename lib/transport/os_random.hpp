#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace redlock::detail {

/// Lock values and retry jitter. Not thread-safe: each client uses its own, on
/// its loop thread.
class random_source {
public:
    /// 128 bits from getrandom(), as 32 lower-case hex digits: the proof of
    /// ownership of one acquisition. Bytes are fetched from the kernel in blocks
    /// so that one lock does not cost one system call.
    [[nodiscard]] auto lock_value() -> std::string;
    /// A fresh token over the first 32 characters of `value` (which has at
    /// least that many): a lock's value is its token, then its holder text,
    /// and each attempt renews only the token.
    void write_token(std::string& value);

    /// Uniform in [0, bound], for retry and reconnect jitter. Seeded from
    /// getrandom() so that clients started together do not retry in lockstep.
    [[nodiscard]] auto jitter(std::chrono::milliseconds bound) -> std::chrono::milliseconds;

    /// 64 bits for jitter (xorshift64*, seeded from getrandom()); not a secret.
    [[nodiscard]] auto next() -> std::uint64_t;

private:
    void refill();

    static constexpr std::size_t block_size = 512;
    unsigned char block_[block_size]{};
    std::size_t used_ = block_size;
    std::uint64_t jitter_state_ = 0;
};

}  // namespace redlock::detail
