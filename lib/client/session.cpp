#include "redlock/session.hpp"

#include "operations/session_state.hpp"

namespace redlock {

namespace {
const std::string no_id;
}  // namespace

auto session::id() const -> const std::string& {
    return state_ ? state_->id : no_id;
}

auto session::ttl() const noexcept -> std::chrono::milliseconds {
    return state_ ? state_->ttl : std::chrono::milliseconds{0};
}

auto session::size() const -> std::size_t {
    if (!state_) return 0;
    std::lock_guard held{state_->mutex};
    return state_->members.size();
}

auto session::lost() const noexcept -> bool {
    return state_ && state_->lost.load(std::memory_order_acquire);
}

auto session::closed() const noexcept -> bool {
    return state_ && state_->closed.load(std::memory_order_acquire);
}

auto session::lost_token() const noexcept -> std::stop_token {
    return state_ ? state_->lost_source.get_token() : std::stop_token{};
}

}  // namespace redlock
