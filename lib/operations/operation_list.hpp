#pragma once

#include "operations/operation.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace redlock::detail {

/// A client's live operations, owned: a list threaded through each
/// operation's private hook, so that starting one allocates nothing. Loop
/// thread only.
class operation_list {
public:
    operation_list() = default;
    operation_list(const operation_list&) = delete;
    auto operator=(const operation_list&) -> operation_list& = delete;
    ~operation_list() { delete_all(); }

    /// Takes `op` in, at the front; returns it.
    auto adopt(std::unique_ptr<operation> op) noexcept -> operation& {
        operation& added = *op.release();
        added.hook_.next = first_;
        if (first_ != nullptr) first_->hook_.prev = &added;
        first_ = &added;
        return added;
    }
    /// Unlinks and deletes `op`, which must be in this list.
    void destroy(operation* op) noexcept {
        (op->hook_.prev != nullptr ? op->hook_.prev->hook_.next : first_) = op->hook_.next;
        if (op->hook_.next != nullptr) op->hook_.next->hook_.prev = op->hook_.prev;
        delete op;  // NOLINT: the list owns its operations
    }
    void delete_all() noexcept {
        while (first_ != nullptr) {
            operation* op = first_;
            first_ = op->hook_.next;
            delete op;  // NOLINT: the list owns its operations
        }
    }
    [[nodiscard]] auto empty() const noexcept -> bool { return first_ == nullptr; }
    /// The acquisition with this ticket (never 0), if it is still live. A scan:
    /// cancelling is rare, and an index would cost every acquisition.
    [[nodiscard]] auto find(std::uint64_t ticket) const noexcept -> operation* {
        if (ticket == 0) return nullptr;  // every other operation's
        for (operation* op = first_; op != nullptr; op = op->hook_.next) {
            if (op->ticket() == ticket) return op;
        }
        return nullptr;
    }
    /// Every live operation, for a loop that may retire some of them.
    [[nodiscard]] auto snapshot() const -> std::vector<operation*> {
        std::vector<operation*> all;
        for (operation* op = first_; op != nullptr; op = op->hook_.next) all.push_back(op);
        return all;
    }

private:
    operation* first_ = nullptr;
};

}  // namespace redlock::detail
