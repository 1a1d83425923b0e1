#include "operations/operation.hpp"

#include "operations/op_context.hpp"
#include "transport/callback_guard.hpp"

namespace redlock::detail {

auto operation::send(std::size_t node, const encoded_command& command, std::uint32_t tag,
                     bool replicated) -> std::uint32_t {
    ++outstanding_;
    return ctx_.node(node).send(command.bytes(), this, tag, slot_, replicated);
}

void operation::disown(std::size_t node, std::uint32_t number) noexcept {
    if (ctx_.node(node).disown(number, this)) --outstanding_;
}

void operation::on_reply(std::uint32_t tag, const reply_event& event) noexcept {
    --outstanding_;
    // A throwing user callback must not cross into libuv; the operation still
    // completes, as its remaining requests keep arriving.
    call_guarded([&] { handle(tag, event); });
    maybe_retire();
}

auto operation::timers() noexcept -> timer_queue& {
    return ctx_.timers();
}

void operation::maybe_retire() noexcept {
    if (finished_ && outstanding_ == 0 && !timer_pending_) ctx_.retire(this);
}

}  // namespace redlock::detail
