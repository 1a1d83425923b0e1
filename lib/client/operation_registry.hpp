#pragma once

// The operations a client has in flight, owned: an operation_list threaded
// through each operation's private hook, so that registering one allocates
// nothing. Loop thread only, but for size(), which any thread may read
// (client_stats).

#include "operations/operation.hpp"
#include "operations/operation_list.hpp"
#include "redlock/error.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace redlock::detail {

class operation_registry {
public:
    operation_registry() = default;
    operation_registry(const operation_registry&) = delete;
    auto operator=(const operation_registry&) -> operation_registry& = delete;
    ~operation_registry() { delete_all(); }

    /// Takes `op` in and starts it.
    void start(std::unique_ptr<operation> op);
    /// `op` has finished and nothing refers to it: out, and deleted.
    void retire(operation* op) noexcept;
    /// Cancels the acquisition `ticket`: false if none in flight has it.
    auto cancel(std::uint64_t ticket) -> bool;
    /// Cancels every operation in flight (shutdown); some may retire at once.
    void cancel_all(errc why);
    /// Deletes every operation left, finished or not (their connections are closed).
    void delete_all() noexcept;

    [[nodiscard]] auto empty() const noexcept -> bool { return list_.empty(); }
    [[nodiscard]] auto size() const noexcept -> std::size_t {
        return size_.load(std::memory_order_relaxed);
    }

private:
    operation_list list_;
    std::atomic<std::size_t> size_{0};
};

}  // namespace redlock::detail
