#pragma once

// When a release is decided, with no I/O: at a majority of deletes, or as soon
// as none is possible, the other nodes get a grace period as long again as
// the decision took (at least 1 ms) — a healthy node answers within that, and
// its report names every node — but a hung node is not waited for until
// request_timeout. What each reply means (deleted, not ours, failed), the
// NOSCRIPT fallback and the late answers' statistics are decided here too;
// times come in as values. release_op is the shell.
// tests/unit/release_extend_decision_test.cpp plays every answer order on 1,
// 3, 5 and 7 nodes through on_answer(); tests/unit/release_flow_test.cpp
// plays them as replies, with the grace timer, through on_reply().

#include "sansio/node_outcomes.hpp"
#include "sansio/quorum_tally.hpp"
#include "sansio/reply.hpp"
#include "sansio/script_fallback.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace redlock::detail {

class release_decision {
public:
    enum class step : std::uint8_t {
        wait,         ///< nothing to do yet
        start_grace,  ///< decided: start the grace timer (once), for grace_timeout(now)
        finish,       ///< report now
    };
    /// A reply that came after the report: counted in client_stats only.
    enum class late : std::uint8_t { no, deleted, failed };
    /// What the shell does with one reply.
    struct reply_actions {
        bool resend_as_eval = false;  ///< NOSCRIPT to EVALSHA: send this node the EVAL form
        late after_report = late::no;
        step next = step::wait;
    };

    explicit release_decision(std::size_t nodes) : tally_{nodes} {
        outcomes_.reset(nodes, node_status::pending);  // what a node is until it answers
    }

    /// The release is sent at `now`.
    void start(std::chrono::steady_clock::time_point now) noexcept { started_ = now; }

    /// Node `node` answered the call sent in form `sent` (or it timed out or
    /// failed). Nothing here reads the time: a reply costs no clock read.
    [[nodiscard]] auto on_reply(std::size_t node, script_form sent, const reply_event& event)
        -> reply_actions {
        reply_actions a;
        if (after_script_reply(sent, event) == script_reply::resend_as_eval) {
            a.resend_as_eval = true;  // restarted or flushed node: EVAL loads the script again
            return a;
        }
        node_outcome outcome = outcome_of(event);
        const bool deleted = outcome.status == node_status::ok;
        if (reported_ || node >= outcomes_.size()) {
            // Decided without this node: its outcome goes to the statistics only.
            a.after_report = deleted ? late::deleted : late::failed;
            return a;
        }
        outcomes_.set(node, std::move(outcome));
        a.next = on_answer(deleted);
        if (a.next == step::finish) reported_ = true;
        return a;
    }
    /// The grace timer fired: report now, unless the last answer came first.
    [[nodiscard]] auto on_grace_timer() noexcept -> step {
        if (reported_) return step::wait;
        reported_ = true;
        return step::finish;
    }
    /// The grace timer's delay, when on_reply said start_grace at `now`.
    [[nodiscard]] auto grace_timeout(std::chrono::steady_clock::time_point now) const noexcept
        -> std::chrono::milliseconds {
        return grace(std::chrono::floor<std::chrono::milliseconds>(now - started_));
    }
    /// From the first request to `now` (the latency histogram's sample).
    [[nodiscard]] auto took(std::chrono::steady_clock::time_point now) const noexcept
        -> std::chrono::nanoseconds {
        return now - started_;
    }
    /// What a reply to the release script says of its node: ok (deleted),
    /// refused (not held with this value), or why it failed.
    [[nodiscard]] static auto outcome_of(const reply_event& event) -> node_outcome {
        if (event.status != request_status::reply) return failed_outcome(event);
        if (integer_of(event.answer).value_or(0) > 0) return {node_status::ok, {}};
        if (is_integer(event.answer, 0))
            return {node_status::refused, "not held with this value (expired, or taken over)"};
        return failed_outcome(event);
    }
    /// Each node's outcome: pending for the nodes yet to answer.
    [[nodiscard]] auto nodes() const noexcept -> const node_outcomes& { return outcomes_; }

    /// A node answered: `deleted` if it deleted our key, otherwise it did not
    /// (not held with our value, an error, a timeout). Not called after finish.
    [[nodiscard]] auto on_answer(bool deleted) noexcept -> step {
        const auto verdict = deleted ? tally_.yes() : tally_.failed();
        if (tally_.pending() == 0) return step::finish;
        if (verdict == quorum_tally::verdict::pending || grace_started_) return step::wait;
        grace_started_ = true;
        return step::start_grace;
    }

    /// How long the grace period is, given how long the decision took.
    [[nodiscard]] static constexpr auto grace(std::chrono::milliseconds took) noexcept
        -> std::chrono::milliseconds {
        return std::max(took, std::chrono::milliseconds{1});
    }

    [[nodiscard]] auto deleted() const noexcept -> std::size_t { return tally_.yes_count(); }
    [[nodiscard]] auto needed() const noexcept -> std::size_t { return tally_.needed(); }
    [[nodiscard]] auto pending() const noexcept -> std::size_t { return tally_.pending(); }

private:
    quorum_tally tally_;
    node_outcomes outcomes_;
    std::chrono::steady_clock::time_point started_;
    bool grace_started_ = false;
    bool reported_ = false;  // finish was said: later replies are late
};

}  // namespace redlock::detail
