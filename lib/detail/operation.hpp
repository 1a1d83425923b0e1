#pragma once

#include "detail/node_connection.hpp"
#include "redlock/error.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <list>
#include <memory>
#include <string_view>

namespace redlock::detail {

class client_core;

/// One acquire, release or extend in flight: a small state machine fed with
/// replies, timeouts and timer expiries, all on the loop thread.
///
/// It lives until it has delivered its result *and* every request it sent has
/// completed (each completes exactly once: reply, timeout, unreachable or
/// stopped), so the connections never hold a dangling sink.
class operation : public reply_sink {
public:
    explicit operation(client_core& core) noexcept : core_{core} {}
    operation(const operation&) = delete;
    auto operator=(const operation&) -> operation& = delete;
    virtual ~operation() = default;

    virtual void start() = 0;
    /// Ends the operation early (shutdown, user cancel). Idempotent.
    virtual void cancel(errc why) = 0;

    std::list<std::unique_ptr<operation>>::iterator self_;  // position in the core's registry

protected:
    /// Tags carry (attempt, kind, node) so a reply finds its context.
    [[nodiscard]] static constexpr auto make_tag(std::uint32_t attempt, std::uint32_t kind,
                                                 std::size_t node) noexcept -> std::uint32_t {
        return (attempt << 12) | (kind << 8) | static_cast<std::uint32_t>(node);
    }
    [[nodiscard]] static constexpr auto tag_attempt(std::uint32_t tag) noexcept -> std::uint32_t {
        return tag >> 12;
    }
    [[nodiscard]] static constexpr auto tag_kind(std::uint32_t tag) noexcept -> std::uint32_t {
        return (tag >> 8) & 0xF;
    }
    [[nodiscard]] static constexpr auto tag_node(std::uint32_t tag) noexcept -> std::size_t {
        return tag & 0xFF;
    }

    void send(std::size_t node, std::initializer_list<std::string_view> argv, std::uint32_t tag);
    virtual void handle(std::uint32_t tag, const reply_event& event) = 0;

    /// Deletes this operation if nothing refers to it any more. Must be the
    /// last thing an entry point does.
    void maybe_retire() noexcept;

    client_core& core_;
    std::size_t outstanding_ = 0;  // requests sent and not yet completed
    bool finished_ = false;        // result delivered
    bool timer_pending_ = false;   // a retry/renew timer refers to us

private:
    void on_reply(std::uint32_t tag, const reply_event& event) noexcept final;
};

}  // namespace redlock::detail
