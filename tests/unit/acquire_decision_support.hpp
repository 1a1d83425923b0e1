#pragma once

// A fixed clock and fixed random numbers for acquire_decision, and a driver
// that plays one attempt's replies into it and records what it asked for.

#include "sansio/acquire_decision.hpp"

#include <chrono>
#include <cstdint>
#include <vector>

namespace redlock_test {

using namespace std::chrono_literals;
using redlock::node_status;
using redlock::detail::acquire_actions;
using redlock::detail::acquire_decision;
using redlock::detail::acquire_settings;
using redlock::detail::grant_answer;
using redlock::detail::node_outcome;

/// What the shell would read for an event: time moves only when a test moves
/// it, and the random value is what it is told.
struct fake_env {
    [[nodiscard]] auto in() const -> redlock::detail::acquire_input {
        return {.now = t,
                .random = rand,
                .subscribed = subscribed_now,
                .subscriptions = subscriptions_now};
    }

    std::chrono::steady_clock::time_point t{std::chrono::seconds{1000}};
    std::uint64_t rand = 0;
    bool subscribed_now = true;
    std::uint64_t subscriptions_now = 5;  ///< SUBSCRIBEs confirmed so far
};

/// What one node answers in an enumerated case.
enum class answer : std::uint8_t { grant, refuse, error, timeout };
inline constexpr answer all_answers[] = {answer::grant, answer::refuse, answer::error,
                                         answer::timeout};

inline auto outcome_of(answer a) -> node_outcome {
    switch (a) {
        case answer::grant:
            return {node_status::ok, {}};
        case answer::refuse:
            return {node_status::refused, "held by another owner"};
        case answer::error:
            return {node_status::error, "ERR something"};
        case answer::timeout:
            return {node_status::timeout, "no reply within 50 ms"};
    }
    return {};
}

/// The decision's verdict after `answers` by the rule alone: a majority of yes
/// wins, a majority made impossible loses.
enum class verdict : std::uint8_t { pending, won, lost };
inline auto rule(std::size_t nodes, const std::vector<answer>& answers) -> verdict {
    const std::size_t needed = nodes / 2 + 1;
    std::size_t yes = 0;
    for (const answer a : answers) yes += a == answer::grant ? 1 : 0;
    if (yes >= needed) return verdict::won;
    if (yes + (nodes - answers.size()) < needed) return verdict::lost;
    return verdict::pending;
}

inline auto plain_settings(std::size_t nodes) -> acquire_settings {
    acquire_settings s;
    s.nodes = nodes;
    s.ttl = 10'000ms;
    s.max_attempts = 1;
    s.retry = {.attempts = 1, .delay = 200ms, .jitter = 100ms};
    return s;
}

/// A waiting acquisition's settings (fair or targeted), retried without end; waiter_ttl is
/// the default 2 s.
inline auto waiting_settings(std::size_t nodes) -> acquire_settings {
    auto s = plain_settings(nodes);
    s.waiting = true;
    s.max_attempts = 0;
    s.request_timeout = 50ms;
    return s;
}

/// Every sequence of `length` answers, each once.
template <class Visit>
void for_each_sequence(std::size_t length, Visit&& visit) {
    std::vector<answer> seq(length, answer::grant);
    std::size_t total = 1;
    for (std::size_t i = 0; i < length; ++i) total *= 4;
    for (std::size_t code = 0; code < total; ++code) {
        std::size_t c = code;
        for (std::size_t i = 0; i < length; ++i) {
            seq[i] = all_answers[c % 4];
            c /= 4;
        }
        visit(seq, code);
    }
}

}  // namespace redlock_test
