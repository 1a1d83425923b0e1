#pragma once

#include "redlock/session.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

namespace redlock::detail {

struct lock_state;

/// What a session handle and the client share. The members are added and
/// removed on the loop thread, and read under the mutex from any thread.
struct session_state {
    // Set before the handle is handed out, immutable afterwards.
    std::string id;
    std::chrono::milliseconds ttl{0};
    std::unique_ptr<std::function<void(const session_loss&)>> on_lost;

    std::atomic<bool> lost{false};
    std::atomic<bool> closed{false};  ///< closed or lost: nothing joins it any more
    std::stop_source lost_source;

    mutable std::mutex mutex;
    /// Its locks (guarded by mutex). A lock names its session weakly, so the
    /// two never keep each other alive.
    std::vector<std::shared_ptr<lock_state>> members;

    [[nodiscard]] auto snapshot() const -> std::vector<std::shared_ptr<lock_state>> {
        std::lock_guard held{mutex};
        return members;
    }
};

}  // namespace redlock::detail
