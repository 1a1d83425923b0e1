#include "client/operation_registry.hpp"

#include <vector>

namespace redlock::detail {

void operation_registry::start(std::unique_ptr<operation> op) {
    operation& started = list_.adopt(std::move(op));
    size_.fetch_add(1, std::memory_order_relaxed);
    started.start();
}

void operation_registry::retire(operation* op) noexcept {
    size_.fetch_sub(1, std::memory_order_relaxed);
    list_.destroy(op);
}

auto operation_registry::cancel(std::uint64_t ticket) -> bool {
    operation* op = list_.find(ticket);
    if (op == nullptr) return false;
    op->cancel(errc::cancelled);
    return true;
}

void operation_registry::cancel_all(errc why) {
    // From a copy: a cancel may retire its operation, and start others (a
    // cancelled acquisition releases what it was granted), which need no cancel.
    for (operation* op : list_.snapshot()) op->cancel(why);
}

void operation_registry::delete_all() noexcept {
    list_.delete_all();
    size_.store(0, std::memory_order_relaxed);
}

}  // namespace redlock::detail
