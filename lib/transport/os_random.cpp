#include "transport/os_random.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <sys/random.h>

namespace redlock::detail {

void random_source::refill() {
    std::size_t filled = 0;
    while (filled < block_size) {
        const ssize_t n = getrandom(block_ + filled, block_size - filled, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            // Without the kernel's CSPRNG there is no safe lock value; this
            // cannot happen on a supported kernel, so it is fatal.
            std::terminate();
        }
        filled += static_cast<std::size_t>(n);
    }
    used_ = 0;
}

auto random_source::lock_value() -> std::string {
    std::string out(32, '0');
    write_token(out);
    return out;
}

void random_source::write_token(std::string& out) {
    constexpr std::size_t bytes = 16;
    if (used_ + bytes > block_size) refill();
    static constexpr char digits[] = "0123456789abcdef";
    for (std::size_t i = 0; i < bytes; ++i) {
        const unsigned char b = block_[used_ + i];
        out[2 * i] = digits[b >> 4];
        out[2 * i + 1] = digits[b & 0xF];
    }
    // Never hand out the same bytes twice, even in memory.
    std::memset(block_ + used_, 0, bytes);
    used_ += bytes;
}

auto random_source::jitter(std::chrono::milliseconds bound) -> std::chrono::milliseconds {
    if (bound.count() <= 0) return std::chrono::milliseconds{0};
    const auto span = static_cast<std::uint64_t>(bound.count()) + 1;
    return std::chrono::milliseconds{static_cast<std::int64_t>(next() % span)};
}

auto random_source::next() -> std::uint64_t {
    if (jitter_state_ == 0) {
        if (used_ + sizeof jitter_state_ > block_size) refill();
        std::memcpy(&jitter_state_, block_ + used_, sizeof jitter_state_);
        used_ += sizeof jitter_state_;
        jitter_state_ |= 1;
    }
    // xorshift64*: fast and good enough for spreading retries; not a secret.
    jitter_state_ ^= jitter_state_ >> 12;
    jitter_state_ ^= jitter_state_ << 25;
    jitter_state_ ^= jitter_state_ >> 27;
    return jitter_state_ * 0x2545F4914F6CDD1DULL;
}

}  // namespace redlock::detail
