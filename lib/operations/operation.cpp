#include "operations/operation.hpp"

#include "transport/callback_guard.hpp"
#include "operations/lock_state.hpp"
#include "operations/op_context.hpp"
#include "sansio/scripts.hpp"
#include "operations/waiter_registry.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <vector>

namespace redlock::detail {

auto operation::send(std::size_t node, const encoded_command& command, std::uint32_t tag)
    -> std::uint32_t {
    ++outstanding_;
    return ctx_.node(node).send(command.bytes(), this, tag);
}

void operation::disown(std::size_t node, std::uint32_t number) noexcept {
    if (ctx_.node(node).disown(number, this)) --outstanding_;
}

auto operation::script_call(const script& s, bool eval, std::span<const std::string_view> keys,
                            std::initializer_list<std::string_view> args) -> encoded_command {
    // The usual call fits on the stack; a lock over many resources does not.
    constexpr std::size_t on_stack = 16;
    const std::size_t argc = 3 + keys.size() + args.size();
    std::array<std::string_view, on_stack> small{};
    std::vector<std::string_view> large;
    std::span<std::string_view> argv{small.data(), argc};
    if (argc > on_stack) {
        large.resize(argc);
        argv = large;
    }
    std::array<char, 24> count_text{};
    const auto count =
        std::to_chars(count_text.data(), count_text.data() + count_text.size(), keys.size());
    std::size_t n = 0;
    argv[n++] = eval ? "EVAL" : "EVALSHA";
    argv[n++] = eval ? s.source : std::string_view{s.sha};
    argv[n++] = std::string_view{count_text.data(), count.ptr};
    for (const auto k : keys) argv[n++] = k;
    for (const auto a : args) argv[n++] = a;
    return encoded_command{std::span<const std::string_view>{argv.data(), argv.size()}};
}

operation::joined_text::joined_text(std::string_view a, std::string_view b, std::string_view c) {
    const std::size_t size = a.size() + b.size() + c.size();
    if (size <= small_.size()) {
        std::copy(c.begin(), c.end(),
                  std::copy(b.begin(), b.end(), std::copy(a.begin(), a.end(), small_.begin())));
        view_ = std::string_view{small_.data(), size};
        return;
    }
    large_.reserve(size);
    large_.append(a).append(b).append(c);
    view_ = large_;
}

operation::lock_keys::lock_keys(std::string_view prefix, const std::vector<std::string>& resources)
    : first_{prefix, resources.empty() ? std::string_view{} : std::string_view{resources.front()}},
      single_{first_.view()} {
    if (resources.size() <= 1) return;
    more_.reserve(resources.size());
    views_.reserve(resources.size());
    for (const auto& r : resources) {
        more_.push_back(std::string{prefix}.append(r));
        views_.emplace_back(more_.back());
    }
}

auto operation::keys_of(const lock_state& lock) const -> lock_keys {
    return lock_keys{ctx_.config().key_prefix, lock.resources};
}

auto operation::queue_key(const lock_state& lock) const -> joined_text {
    return joined_text{ctx_.config().queue_prefix, lock.resources.front(),
                       lock.kind == lock_kind::permit ? "|permits" : ""};
}

auto operation::release_call(const lock_state& lock, bool eval, std::string_view waiter_id,
                             permit_scope scope, const handoff_offer* successor) const
    -> encoded_command {
    const std::string_view wake{&lock.wake, 1};
    if (lock.kind == lock_kind::permit) {
        const std::vector<std::string> keys = permit_keys(lock, scope);
        const joined_text queue = queue_key(lock);
        std::vector<std::string_view> views(keys.begin(), keys.end());
        views.push_back(queue.view());
        return script_call(release_wake_script(), eval, views,
                           {lock.value, wake, ctx_.wake_prefix(), waiter_id, "p"});
    }
    const lock_keys keys = keys_of(lock);
    if (lock.resources.size() == 1) {
        const std::string_view kind = lock.kind == lock_kind::shared ? "r" : "w";
        if (successor != nullptr) {
            return script_call(release_wake_script(), eval, {keys.front(), queue_key(lock).view()},
                               {lock.value, wake, ctx_.wake_prefix(), waiter_id, kind,
                                successor->value, successor->ttl_text, successor->waiter_id});
        }
        return script_call(release_wake_script(), eval, {keys.front(), queue_key(lock).view()},
                           {lock.value, wake, ctx_.wake_prefix(), waiter_id, kind});
    }
    return script_call(release_script(), eval, keys.all(), {lock.value});
}

auto operation::permit_count_key(const lock_state& lock) const -> std::string {
    return ctx_.config().key_prefix + lock.resources.front() + "|permits";
}

auto operation::permit_key_prefix(const lock_state& lock) const -> std::string {
    return ctx_.config().key_prefix + lock.resources.front() + "|permit|";
}

auto operation::permit_keys(const lock_state& lock, permit_scope scope) const
    -> std::vector<std::string> {
    const std::string prefix = permit_key_prefix(lock);
    std::vector<std::string> keys;
    if (scope == permit_scope::held && lock.slot >= 0) {
        keys.push_back(prefix + std::to_string(lock.slot));
        return keys;
    }
    keys.reserve(static_cast<std::size_t>(lock.permits));
    for (int i = 0; i < lock.permits; ++i) {
        if (scope == permit_scope::all_but_held && i == lock.slot) continue;
        keys.push_back(prefix + std::to_string(i));
    }
    return keys;
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
