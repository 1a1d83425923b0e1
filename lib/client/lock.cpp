#include "redlock/lock.hpp"

#include "operations/lock_state.hpp"

namespace redlock {
namespace {
const std::string empty_string;
const std::vector<std::string> no_resources;
}  // namespace

auto lock::resource() const -> const std::string& {
    return state_ && !state_->resources.empty() ? state_->resources.front() : empty_string;
}

auto lock::resources() const -> const std::vector<std::string>& {
    return state_ ? state_->resources : no_resources;
}

auto lock::fence() const noexcept -> std::optional<std::uint64_t> {
    return state_ ? state_->fence : std::nullopt;
}

auto lock::kind() const noexcept -> lock_kind {
    return state_ ? state_->kind : lock_kind::exclusive;
}

auto lock::permit() const noexcept -> std::optional<int> {
    if (!state_ || state_->kind != lock_kind::permit || state_->slot < 0) return std::nullopt;
    return state_->slot;
}

auto lock::permits() const noexcept -> std::optional<int> {
    if (!state_ || state_->kind != lock_kind::permit) return std::nullopt;
    return state_->permits;
}

auto lock::owner() const -> const std::string& {
    return state_ ? state_->owner : empty_string;
}

auto lock::holds() const noexcept -> int {
    return state_ ? state_->holds.load(std::memory_order_acquire) : 0;
}

auto lock::lost() const noexcept -> bool {
    return state_ && state_->lost.load(std::memory_order_acquire);
}

auto lock::lost_token() const noexcept -> std::stop_token {
    return state_ ? state_->lost_source.get_token() : std::stop_token{};
}

auto lock::value() const -> const std::string& {
    return state_ ? state_->value : empty_string;
}

auto lock::holder() const -> std::string_view {
    return holder_of(value());
}

auto holder_of(std::string_view value) noexcept -> std::string_view {
    constexpr std::size_t token = 32;
    if (value.size() <= token + 1 || value[token] != '|') return {};
    return value.substr(token + 1);
}

auto lock::valid_until() const noexcept -> std::chrono::steady_clock::time_point {
    return state_ ? state_->valid_until() : std::chrono::steady_clock::time_point{};
}

auto lock::remaining() const noexcept -> std::chrono::milliseconds {
    if (!valid()) return std::chrono::milliseconds{0};
    // Rounded down: never report more time than is left.
    return std::chrono::floor<std::chrono::milliseconds>(state_->valid_until() -
                                                         std::chrono::steady_clock::now());
}

auto lock::valid() const noexcept -> bool {
    return state_ && !state_->released.load(std::memory_order_acquire) &&
           !state_->lost.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < state_->valid_until();
}

}  // namespace redlock
