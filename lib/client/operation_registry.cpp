#include "client/operation_registry.hpp"

#include <vector>

namespace redlock::detail {

void operation_registry::start(std::unique_ptr<operation> op) {
    operation& started = *op.release();
    started.next_ = head_;
    if (head_ != nullptr) head_->prev_ = &started;
    head_ = &started;
    size_.fetch_add(1, std::memory_order_relaxed);
    started.start();
}

void operation_registry::retire(operation* op) noexcept {
    (op->prev_ != nullptr ? op->prev_->next_ : head_) = op->next_;
    if (op->next_ != nullptr) op->next_->prev_ = op->prev_;
    size_.fetch_sub(1, std::memory_order_relaxed);
    delete op;  // NOLINT: the registry owns its operations
}

auto operation_registry::cancel(std::uint64_t ticket) -> bool {
    // A scan: cancelling is rare, and a ticket index would cost every acquisition.
    for (operation* op = head_; op != nullptr; op = op->next_) {
        if (op->ticket() == ticket) {
            op->cancel(errc::cancelled);
            return true;
        }
    }
    return false;
}

void operation_registry::cancel_all(errc why) {
    // From a copy: a cancel may retire its operation, and start others (a
    // cancelled acquisition releases what it was granted), which need no cancel.
    std::vector<operation*> live;
    for (operation* op = head_; op != nullptr; op = op->next_) live.push_back(op);
    for (operation* op : live) op->cancel(why);
}

void operation_registry::delete_all() noexcept {
    while (head_ != nullptr) delete std::exchange(head_, head_->next_);  // NOLINT: owned
    size_.store(0, std::memory_order_relaxed);
}

}  // namespace redlock::detail
