#include "operations/grant_commands.hpp"

#include "operations/lock_state.hpp"
#include "sansio/election_scripts.hpp"
#include "sansio/scripts.hpp"

#include <array>
#include <charconv>
#include <span>
#include <string_view>
#include <vector>

namespace redlock::detail {

auto grant_commands::grant(bool eval, int first_permit) const -> encoded_command {
    // Text made here rather than kept: a thousand acquisitions in flight hold
    // a thousand of acquire_op.
    std::array<char, 24> ttl_buf{};
    const auto ttl_end =
        std::to_chars(ttl_buf.data(), ttl_buf.data() + ttl_buf.size(), lock_.node_ttl().count())
            .ptr;
    const std::string_view ttl_text{ttl_buf.data(),
                                    static_cast<std::size_t>(ttl_end - ttl_buf.data())};
    if (lock_.kind == lock_kind::permit) return permit_grant(eval, ttl_text, first_permit);
    const lock_keys keys = keys_of(keys_, lock_);
    if (lock_.kind == lock_kind::shared) {
        // The fence counter last, and only for a reader that reads it.
        const joined_text readers = readers_key(keys_, lock_);
        const joined_text queue = queue_key(keys_, lock_);
        const joined_text live = live_key(keys_, lock_);
        const std::string fence = how_.read_fence ? fence_key(keys_, lock_) : std::string{};
        const std::array<std::string_view, 5> declared{keys.front(), readers.view(), queue.view(),
                                                       live.view(), fence};
        return script_call(shared_acquire_script(), eval,
                           std::span{declared.data(), how_.read_fence ? 5U : 4U},
                           {lock_.value, ttl_text, queue_ ? queue_->waiter_id : std::string_view{},
                            queue_ ? queue_->liveness_text : std::string_view{},
                            queue_ ? queue_->arrival_text : std::string_view{}, "0"});
    }
    if (queue_ != nullptr) {
        // The fence counter last, and only when it is raised.
        const joined_text queue = queue_key(keys_, lock_);
        const joined_text live = live_key(keys_, lock_);
        const joined_text offers = offer_key(keys_, lock_);
        const std::string fence = how_.fencing ? fence_key(keys_, lock_) : std::string{};
        const std::array<std::string_view, 5> declared{keys.front(), queue.view(), live.view(),
                                                       offers.view(), fence};
        return script_call(wait_acquire_script(), eval,
                           std::span{declared.data(), how_.fencing ? 5U : 4U},
                           {lock_.value, ttl_text, queue_->waiter_id, queue_->liveness_text,
                            how_.mode == wait_mode::fair ? "f" : "t", queue_->arrival_text,
                            queue_->offer_text, queue_->first_attempt ? "n" : ""});
    }
    if (!how_.scripted) return {"SET", keys.front(), lock_.value, "NX", "PX", ttl_text};
    if (how_.fencing) {
        return script_call(acquire_script(), eval, {keys.front(), fence_key(keys_, lock_)},
                           {lock_.value, ttl_text, "1"});
    }
    return script_call(acquire_script(), eval, keys.all(), {lock_.value, ttl_text, "0"});
}

auto grant_commands::permit_grant(bool eval, std::string_view ttl_text, int first_permit) const
    -> encoded_command {
    // Every permit's key is declared: the script picks among them.
    const std::string count_key = permit_count_key(keys_, lock_);
    const joined_text queue = queue_key(keys_, lock_);
    const joined_text live = live_key(keys_, lock_);
    const std::vector<std::string> permits = permit_keys(keys_, lock_, permit_scope::all);
    std::vector<std::string_view> declared;
    declared.reserve(permits.size() + 3);
    declared.insert(declared.end(), {count_key, queue.view(), live.view()});
    declared.insert(declared.end(), permits.begin(), permits.end());
    const std::string count = std::to_string(lock_.permits);
    const std::string first = std::to_string(first_permit);
    return script_call(
        permit_acquire_script(), eval, declared,
        {lock_.value, ttl_text, count, first, queue_ ? queue_->waiter_id : std::string_view{},
         queue_ ? queue_->liveness_text : std::string_view{},
         how_.mode == wait_mode::fair ? "f" : "t",
         queue_ ? queue_->arrival_text : std::string_view{}});
}

auto grant_commands::confirm(std::uint64_t token, bool eval) const -> encoded_command {
    const lock_keys keys = keys_of(keys_, lock_);
    const std::string fence = fence_key(keys_, lock_);
    const std::string token_text = std::to_string(token);
    if (lock_.proclamation) {
        const std::string& name = lock_.resources.front();
        const joined_text leader = tagged_key(keys_.key_prefix, name, leader_key_suffix);
        const joined_text watchers = tagged_key(keys_.key_prefix, name, observers_key_suffix);
        return script_call(fence_confirm_proclaim_script(), eval,
                           {keys.front(), fence, leader.view(), watchers.view()},
                           {lock_.value, token_text, classic_wake_prefix(keys_),
                            shard_wake_channel(keys_, lock_), *lock_.proclamation});
    }
    return script_call(fence_confirm_script(), eval, {keys.front(), fence},
                       {lock_.value, token_text});
}

auto grant_commands::dequeue() const -> encoded_command {
    if (queue_ != nullptr && queue_->offers)
        return release_call(keys_, lock_, true, queue_->waiter_id, permit_scope::held, nullptr,
                            true);
    return script_call(dequeue_script(), true,
                       {queue_key(keys_, lock_).view(), live_key(keys_, lock_).view()},
                       {queue_ ? queue_->waiter_id : std::string_view{}});
}

// ---- the answers ---------------------------------------------------------------------------

namespace {

auto yes_no_outcome(const reply_event& event, std::optional<long long> yes, bool confirm)
    -> node_outcome {
    if (yes == 1) return {node_status::ok, {}};
    if (yes == 0) {
        return {node_status::refused, confirm ? "no longer holds our value at the fencing round"
                                              : "held by another owner"};
    }
    return {node_status::error, describe_reply(event.answer)};
}

}  // namespace

auto grant_commands::grant_outcome(const reply_event& event) const -> node_outcome {
    if (event.status != request_status::reply || is_error(event.answer)) {
        return failed_outcome(event);
    }
    std::optional<long long> yes;
    if (how_.scripted || queue_ != nullptr) {
        // An array, or for a plain reader's grant a bare integer.
        yes = integer_of(event.answer);
        if (!yes) yes = array_integer(event.answer, 0);
    } else if (is_status_ok(event.answer)) {
        yes = 1;
    } else if (is_nil(event.answer)) {
        yes = 0;
    }
    return yes_no_outcome(event, yes, false);
}

auto grant_commands::confirm_outcome(const reply_event& event) -> node_outcome {
    if (event.status != request_status::reply || is_error(event.answer)) {
        return failed_outcome(event);
    }
    return yes_no_outcome(event, integer_of(event.answer), true);
}

auto grant_commands::grant_answer_of(const reply_event& event) const -> grant_answer {
    grant_answer answer{grant_outcome(event)};
    if (event.status != request_status::reply) return answer;
    if (queue_ != nullptr) {
        answer.holder_ttl = array_integer(event.answer, 2).value_or(-2);
        answer.queued = array_integer(event.answer, 0) == 0;  // a refusal enqueues us there
    }
    if (lock_.kind == lock_kind::permit) {
        const auto second = array_integer(event.answer, 1);
        if (answer.outcome.status == node_status::ok && second) {
            answer.permit = static_cast<int>(*second);
        } else if (array_integer(event.answer, 0) == -1) {
            answer.permits_conflict = true;
            answer.outcome = {node_status::error,
                              "it knows this semaphore with " + std::to_string(second.value_or(0)) +
                                  " permits, not " + std::to_string(lock_.permits)};
        }
        return answer;
    }
    if (how_.scripted) {
        if (const auto counter = array_integer(event.answer, 1); counter && *counter > 0)
            answer.counter = static_cast<std::uint64_t>(*counter);
    }
    return answer;
}

auto grant_commands::handoff_answer_of(const reply_event& event) -> grant_answer {
    grant_answer answer;
    if (event.status != request_status::reply || is_error(event.answer)) {
        answer.outcome = failed_outcome(event);
        return answer;
    }
    const long long said = integer_of(event.answer).value_or(-1);
    if (said == 2) {
        answer.outcome = {node_status::ok, {}};
    } else if (said == 3 || said == 1 || said == 0) {
        // Released to whoever is first in line there (or not held there by the
        // releaser any more): we are still queued, and the key may be free.
        answer.outcome = {node_status::refused, "handed to a waiter ahead of us"};
        answer.queued = true;
    } else {
        answer.outcome = {node_status::error, describe_reply(event.answer)};
    }
    return answer;
}

auto grant_commands::held_resource(const reply_event& event) const -> std::optional<std::size_t> {
    // Only acquire_source's refusal {0, counter, index} names a resource.
    if (lock_.resources.size() < 2 || queue_ != nullptr || lock_.kind != lock_kind::exclusive ||
        event.status != request_status::reply || array_integer(event.answer, 0) != 0)
        return std::nullopt;
    const auto index = array_integer(event.answer, 2);
    if (!index || *index < 0 || static_cast<std::size_t>(*index) >= lock_.resources.size())
        return std::nullopt;
    return static_cast<std::size_t>(*index);
}

}  // namespace redlock::detail
