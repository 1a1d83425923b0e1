#include "sansio/session_renewal.hpp"

#include "sansio/delay_policy.hpp"
#include "sansio/timing.hpp"

#include <algorithm>

namespace redlock::detail {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

auto decide_session_round(const session_settings& settings,
                          std::span<const session_node_reply> replies,
                          std::span<const steady_clock::time_point> valid_until,
                          steady_clock::time_point sent, steady_clock::time_point now)
    -> session_round_outcome {
    session_round_outcome out;
    const std::size_t needed = quorum(settings.nodes);
    for (const auto& r : replies) {
        if (r.answers) ++out.nodes_answered;
    }
    // Counted from the round's start: the nodes set the TTL after it.
    out.deadline =
        now + validity(settings.ttl, now - sent, settings.drift_factor, settings.drift_floor);
    bool undecided = false;
    for (std::size_t lock = 0; lock < valid_until.size(); ++lock) {
        std::size_t yes = 0;
        std::size_t no = 0;
        for (const auto& r : replies) {
            if (!r.answers || lock >= r.answers->size()) continue;
            const session_answer a = (*r.answers)[lock];
            if (a == session_answer::extended) {
                ++yes;
            } else if (a != session_answer::failed) {
                ++no;
            }
        }
        // A majority confirmed after the validity ended would be a grant
        // without an acquisition's checks: not renewed, and the deadline
        // (already past) loses the session.
        if (yes >= needed && now < valid_until[lock] && out.deadline > now) {
            out.renewed.push_back(lock);
            for (std::size_t node = 0; node < replies.size(); ++node) {
                const auto& answers = replies[node].answers;
                if (answers && lock < answers->size() &&
                    (*answers)[lock] == session_answer::missing)
                    out.repairs.emplace_back(lock, node);
            }
        } else if (no > settings.nodes - needed) {
            out.refused.push_back(lock);
        } else {
            undecided = true;
        }
    }
    if (undecided) {
        out.next_in = renew_retry_gap(settings.request_timeout);
    } else {
        const auto due = sent + renew_interval(settings.ttl, settings.renew_fraction);
        out.next_in = std::max(milliseconds{0}, std::chrono::ceil<milliseconds>(due - now));
    }
    return out;
}

auto session_reply_of(const reply_event& event, std::span<const std::size_t> keys)
    -> session_node_reply {
    session_node_reply out;
    if (event.status != request_status::reply) {
        out.status = event.status == request_status::timeout   ? node_status::timeout
                     : event.status == request_status::stopped ? node_status::cancelled
                                                               : node_status::unreachable;
        out.cause = std::string{event.cause};
        return out;
    }
    std::size_t total = 0;
    for (std::size_t k : keys) total += k;
    if (!is_array(event.answer, total)) {
        out.status = node_status::error;
        out.cause = is_error(event.answer) ? std::string{reply_text(event.answer)}
                                           : "unexpected reply: " + describe_reply(event.answer);
        return out;
    }
    std::vector<session_answer> answers;
    answers.reserve(keys.size());
    std::size_t at = 0;
    for (std::size_t k : keys) {
        session_answer a = session_answer::extended;
        for (std::size_t i = 0; i < k; ++i, ++at) {
            const std::optional<long long> v = array_integer(event.answer, at);
            if (!v || *v < -1 || *v > 1) {
                out.status = node_status::error;
                out.cause = "unexpected reply: " + describe_reply(event.answer);
                return out;
            }
            if (*v == 0) {
                a = session_answer::other_value;
            } else if (*v == -1 && a == session_answer::extended) {
                a = session_answer::missing;
            }
        }
        answers.push_back(a);
    }
    out.answers = std::move(answers);
    return out;
}

void merge_session_part(session_node_reply& node, std::size_t first, std::size_t count,
                        const session_node_reply& part) {
    if (!part.answers) {
        if (node.status == node_status::ok) {
            node.status = part.status;
            node.cause = part.cause;
        }
        return;
    }
    for (std::size_t i = 0; i < count && i < part.answers->size(); ++i)
        (*node.answers)[first + i] = (*part.answers)[i];
}

auto session_next_part(node_status status, std::size_t part, std::size_t parts) noexcept
    -> std::optional<std::size_t> {
    const bool node_answers =
        status == node_status::ok || status == node_status::error || status == node_status::refused;
    if (!node_answers || part + 1 >= parts) return std::nullopt;
    return part + 1;
}

void finish_session_reply(session_node_reply& node) {
    if (!node.answers) return;
    const bool any = std::ranges::any_of(
        *node.answers, [](session_answer a) { return a != session_answer::failed; });
    if (!any) node.answers.reset();
}

auto session_lock_reports(std::span<const session_node_reply> replies, std::size_t index)
    -> std::vector<node_status> {
    std::vector<node_status> out;
    out.reserve(replies.size());
    for (const auto& r : replies) {
        if (!r.answers || index >= r.answers->size()) {
            out.push_back(r.answers ? node_status::error : r.status);
        } else if ((*r.answers)[index] == session_answer::failed) {
            out.push_back(r.status);
        } else {
            out.push_back((*r.answers)[index] == session_answer::extended ? node_status::ok
                                                                          : node_status::refused);
        }
    }
    return out;
}

auto session_expired(std::span<const steady_clock::time_point> valid_until,
                     steady_clock::time_point now) noexcept -> bool {
    return std::ranges::any_of(valid_until, [now](auto t) { return t <= now; });
}

auto session_next_deadline(std::span<const steady_clock::time_point> valid_until) noexcept
    -> std::optional<steady_clock::time_point> {
    if (valid_until.empty()) return std::nullopt;
    return *std::ranges::min_element(valid_until);
}

}  // namespace redlock::detail
