#include "operations/lock_commands.hpp"

#include "operations/lock_state.hpp"
#include "operations/waiter_registry.hpp"
#include "sansio/election_scripts.hpp"
#include "sansio/hash_slot.hpp"
#include "sansio/scripts.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <span>

namespace redlock::detail {

joined_text::joined_text(std::initializer_list<std::string_view> parts) {
    std::size_t size = 0;
    for (const auto part : parts) size += part.size();
    if (size <= small_.size()) {
        auto out = small_.begin();
        for (const auto part : parts) out = std::copy(part.begin(), part.end(), out);
        view_ = std::string_view{small_.data(), size};
        return;
    }
    large_.reserve(size);
    for (const auto part : parts) large_.append(part);
    view_ = large_;
}

auto tagged_key(std::string_view prefix, std::string_view resource, std::string_view suffix)
    -> joined_text {
    // tagged_resource's rule, without its allocation.
    if (has_own_hash_tag(resource)) return joined_text{prefix, resource, suffix};
    return joined_text{prefix, "{", resource, "}", suffix};
}

lock_keys::lock_keys(std::string_view prefix, const std::vector<std::string>& resources)
    : first_{tagged_key(
          prefix, resources.empty() ? std::string_view{} : std::string_view{resources.front()})},
      single_{first_.view()} {
    if (resources.size() <= 1) return;
    more_.reserve(resources.size());
    views_.reserve(resources.size());
    for (const auto& r : resources) {
        more_.emplace_back(tagged_key(prefix, r).view());
        views_.emplace_back(more_.back());
    }
}

auto script_call(const script& s, bool eval, std::span<const std::string_view> keys,
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

auto keys_of(const key_space& space, const lock_state& lock) -> lock_keys {
    return lock_keys{space.key_prefix, lock.resources};
}

auto readers_key(const key_space& space, const lock_state& lock) -> joined_text {
    return tagged_key(space.key_prefix, lock.resources.front(), "|readers");
}

auto queue_key(const key_space& space, const lock_state& lock) -> joined_text {
    return tagged_key(space.queue_prefix, lock.resources.front(),
                      lock.kind == lock_kind::permit ? "|permits" : "");
}

auto live_key(const key_space& space, const lock_state& lock) -> joined_text {
    return tagged_key(space.queue_prefix, lock.resources.front(),
                      lock.kind == lock_kind::permit ? "|permits|live" : "|live");
}

auto offer_key(const key_space& space, const lock_state& lock) -> joined_text {
    return tagged_key(space.queue_prefix, lock.resources.front(),
                      lock.kind == lock_kind::permit ? "|permits|offer" : "|offer");
}

auto fence_key(const key_space& space, const lock_state& lock) -> std::string {
    return std::string{tagged_key(space.fence_prefix, lock.resources.front()).view()};
}

auto permit_count_key(const key_space& space, const lock_state& lock) -> std::string {
    return std::string{tagged_key(space.key_prefix, lock.resources.front(), "|permits").view()};
}

auto permit_keys(const key_space& space, const lock_state& lock, permit_scope scope)
    -> std::vector<std::string> {
    const std::string prefix{
        tagged_key(space.key_prefix, lock.resources.front(), "|permit|").view()};
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

auto shard_wake_channel(const key_space& space, const lock_state& lock) -> std::string {
    return shard_wake_channel(space, lock.resources.front());
}

auto shard_wake_channel(const key_space& space, std::string_view resource) -> std::string {
    if (!space.publish_shard) return {};
    return std::string{tagged_key(space.wake_prefix, resource).view()};
}

auto release_call(const key_space& space, const lock_state& lock, bool eval,
                  std::string_view waiter_id, permit_scope scope, const handoff_offer* successor,
                  bool leaving) -> encoded_command {
    const std::string_view wake{&lock.wake, 1};
    // An empty channel publishes nothing there (scripts.cpp, release_wake_source).
    const std::string_view classic = classic_wake_prefix(space);
    // On the stack, like the keys: a release is on every lock's path.
    const joined_text shard_channel =
        space.publish_shard ? tagged_key(space.wake_prefix, lock.resources.front()) : joined_text{};
    const std::string_view shard = shard_channel.view();
    if (lock.kind == lock_kind::permit) {
        const std::vector<std::string> keys = permit_keys(space, lock, scope);
        const joined_text queue = queue_key(space, lock);
        const joined_text live = live_key(space, lock);
        const joined_text offers = offer_key(space, lock);
        std::vector<std::string_view> views(keys.begin(), keys.end());
        views.insert(views.end(), {queue.view(), live.view(), offers.view()});
        return script_call(release_wake_script(), eval, views,
                           {lock.value, wake, classic, waiter_id, "p", shard});
    }
    const lock_keys keys = keys_of(space, lock);
    if (lock.resources.size() == 1) {
        const joined_text queue = queue_key(space, lock);
        const joined_text live = live_key(space, lock);
        const joined_text offers = offer_key(space, lock);
        if (lock.kind == lock_kind::shared) {
            const joined_text readers = readers_key(space, lock);
            return script_call(
                release_wake_script(), eval,
                {keys.front(), readers.view(), queue.view(), live.view(), offers.view()},
                {lock.value, wake, classic, waiter_id, "r", shard});
        }
        // A leaving waiter (no value) releases what its offer was handed, if anything.
        const std::string_view value = leaving ? std::string_view{} : lock.value;
        // A campaign's lock (it proclaims) abdicates in the same call: the leader hash and
        // the observers' hash go after the release's keys.
        const bool abdicates = lock.proclamation != nullptr;
        const joined_text leader =
            abdicates ? tagged_key(space.key_prefix, lock.resources.front(), leader_key_suffix)
                      : joined_text{};
        const joined_text watchers =
            abdicates ? tagged_key(space.key_prefix, lock.resources.front(), observers_key_suffix)
                      : joined_text{};
        const std::array<std::string_view, 6> declared{
            keys.front(), queue.view(), live.view(), offers.view(), leader.view(), watchers.view()};
        const std::span<const std::string_view> release_keys{declared.data(), abdicates ? 6U : 4U};
        const script& release = abdicates ? abdicate_release_wake_script() : release_wake_script();
        if (successor != nullptr) {
            return script_call(release, eval, release_keys,
                               {value, wake, classic, waiter_id, "w", shard, successor->value,
                                successor->ttl_text, successor->waiter_id});
        }
        return script_call(release, eval, release_keys,
                           {value, wake, classic, waiter_id, "w", shard});
    }
    return script_call(release_script(), eval, keys.all(), {lock.value});
}

}  // namespace redlock::detail
