#pragma once

#include "sansio/reply.hpp"

#include <hiredis/hiredis.h>

#include <cstddef>
#include <memory>
#include <string>

namespace redlock::detail {

/// Frees a reply that reply_reader built, elements first.
struct reply_free {
    void operator()(reply* r) const noexcept;
};
using reply_ptr = std::unique_ptr<reply, reply_free>;

/// hiredis's reply parser, building our own `reply` values (sansio/reply.hpp), with a
/// bound on what one reply may make us allocate. One allocation per value: the value,
/// then its bytes or its element table.
///
/// hiredis 0.14's reader trusts the peer: an array header allocates its element
/// table before any element arrives (`*2147483647\r\n`, 13 bytes, asks for 16 GiB),
/// and nested headers multiply that. No reply of ours comes near the limits
/// below, so a reply that exceeds one is a protocol error, reported before the
/// allocation is made.
class reply_reader {
public:
    static constexpr std::size_t max_elements = 64 * 1024;      ///< array slots per reply
    static constexpr std::size_t max_bytes = 16 * 1024 * 1024;  ///< string bytes per reply

    reply_reader();
    reply_reader(const reply_reader&) = delete;
    auto operator=(const reply_reader&) -> reply_reader& = delete;
    ~reply_reader();

    /// Appends received bytes. False on a protocol error (see error()).
    [[nodiscard]] auto feed(const char* data, std::size_t len) -> bool;
    /// False on a protocol error. Otherwise `*out` is the next complete reply, or null
    /// when more bytes are needed.
    [[nodiscard]] auto next(reply_ptr& out) -> bool;
    /// Drops everything buffered and parsed so far, as for a new connection.
    void reset();

    /// Bytes received and not yet parsed into a reply.
    [[nodiscard]] auto unparsed() const noexcept -> std::size_t;
    [[nodiscard]] auto error() const -> std::string;

    /// What the current reply has used so far (read by the allocation hooks).
    struct budget {
        std::size_t elements = 0;
        std::size_t bytes = 0;
        const char* exceeded = nullptr;  ///< the limit that stopped the reply, if any
    };

private:
    redisReader* reader_ = nullptr;
    budget used_;
};

}  // namespace redlock::detail
