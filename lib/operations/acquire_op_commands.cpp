// What an acquisition sends, for each kind of lock: the grant (SET NX, or a
// script), the fencing confirm.
#include "operations/acquire_op.hpp"
#include "sansio/command.hpp"
#include "sansio/reply.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/scripts.hpp"
#include "sansio/timing.hpp"

#include <array>
#include <charconv>
#include <string>

namespace redlock::detail {

using std::chrono::milliseconds;

auto acquire_op::grant_kind(bool eval) const noexcept -> kind {
    if (!wait_ && !scripted_) return set_kind;
    return eval ? script_eval_kind : script_sha_kind;
}

auto acquire_op::grant_command(bool eval) const -> encoded_command {
    // Text made here rather than kept: a thousand acquisitions in flight hold
    // a thousand of this object.
    std::array<char, 24> ttl_buf{};
    const std::string_view ttl_text{
        ttl_buf.data(),
        static_cast<std::size_t>(
            std::to_chars(ttl_buf.data(), ttl_buf.data() + ttl_buf.size(), state_->ttl.count())
                .ptr -
            ttl_buf.data())};
    if (state_->kind == lock_kind::permit) return permit_grant_command(eval, ttl_text);
    const lock_keys keys = keys_of(*state_);
    const bool fencing = decision_.settings().fencing;
    if (state_->kind == lock_kind::shared) {
        const std::string fence = read_fence_ ? fence_key() : std::string{};
        return script_call(shared_acquire_script(), eval,
                           {keys.front(), fence, queue_key(*state_).view()},
                           {state_->value, ttl_text, wait_ ? wait_->waiter_id : std::string_view{},
                            wait_ ? wait_->liveness_text : std::string_view{},
                            wait_ ? wait_->arrival_text : std::string_view{}, "0"});
    }
    if (wait_) {
        const std::string fence = fencing ? fence_key() : std::string{};  // empty: no counter
        return script_call(
            wait_acquire_script(), eval, {keys.front(), fence, queue_key(*state_).view()},
            {state_->value, ttl_text, wait_->waiter_id, wait_->liveness_text,
             decision_.settings().mode == wait_mode::fair ? "f" : "t", wait_->arrival_text});
    }
    if (!scripted_) return {"SET", keys.front(), state_->value, "NX", "PX", ttl_text};
    if (fencing) {
        return script_call(acquire_script(), eval, {keys.front(), fence_key()},
                           {state_->value, ttl_text, "1"});
    }
    return script_call(acquire_script(), eval, keys.all(), {state_->value, ttl_text, "0"});
}

auto acquire_op::permit_grant_command(bool eval, std::string_view ttl_text) const
    -> encoded_command {
    const std::string count_key = permit_count_key(*state_);
    const std::string prefix = permit_key_prefix(*state_);
    const std::string permits = std::to_string(state_->permits);
    const std::string first = std::to_string(first_permit_);
    return script_call(permit_acquire_script(), eval, {count_key, queue_key(*state_).view()},
                       {state_->value, ttl_text, permits, first, prefix,
                        wait_ ? wait_->waiter_id : std::string_view{},
                        wait_ ? wait_->liveness_text : std::string_view{},
                        decision_.settings().mode == wait_mode::fair ? "f" : "t",
                        wait_ ? wait_->arrival_text : std::string_view{}});
}

void acquire_op::send_grant(std::size_t node, bool eval) {
    const std::uint32_t number =
        send(node, grant_command(eval), make_tag(decision_.attempt(), grant_kind(eval), node));
    if (node < grant_numbers_.size()) grant_numbers_[node] = number;
}

auto acquire_op::fence_key() const -> std::string {
    return ctx_.config().fence_prefix + state_->resources.front();
}

auto acquire_op::confirm_command(bool eval) const -> encoded_command {
    const lock_keys keys = keys_of(*state_);
    return script_call(fence_confirm_script(), eval, {keys.front(), fence_key()},
                       {state_->value, std::to_string(decision_.token())});
}

void acquire_op::send_confirm(std::size_t node, bool eval) {
    send(node, confirm_command(eval),
         make_tag(decision_.attempt(), eval ? confirm_eval_kind : confirm_sha_kind, node));
}

}  // namespace redlock::detail
