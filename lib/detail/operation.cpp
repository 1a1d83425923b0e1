#include "detail/operation.hpp"

#include "detail/client_core.hpp"

namespace redlock::detail {

void operation::send(std::size_t node, std::initializer_list<std::string_view> argv,
                     std::uint32_t tag) {
    ++outstanding_;
    core_.node(node).send(argv, this, tag);
}

void operation::on_reply(std::uint32_t tag, const reply_event& event) noexcept {
    --outstanding_;
    try {
        handle(tag, event);
    } catch (...) {
        // Only allocation can throw here; an exception must not cross into libuv.
        // The operation still completes: its remaining requests keep arriving.
    }
    maybe_retire();
}

void operation::maybe_retire() noexcept {
    if (finished_ && outstanding_ == 0 && !timer_pending_) core_.retire(this);
}

}  // namespace redlock::detail
