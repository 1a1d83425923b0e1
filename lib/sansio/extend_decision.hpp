#pragma once

// The decisions of one extension, with no I/O: whether to send at all (the
// arguments, and whether the lock is still ours at `now`), what each node's
// reply means, the NOSCRIPT fallback, the verdict, why it failed, which nodes
// to repair, and the new deadline — all from the replies and the times passed
// in. extend_op is the shell that sends what this asks for.
// tests/unit/release_extend_decision_test.cpp plays every answer order on 1,
// 3, 5 and 7 nodes through on_answer(); tests/unit/extend_flow_test.cpp plays
// them as replies through start() and on_reply(), and
// tests/unit/extend_outcome_test.cpp their edges.

#include "redlock/error.hpp"
#include "sansio/node_outcomes.hpp"
#include "sansio/permit_tally.hpp"
#include "sansio/quorum_tally.hpp"
#include "sansio/reply.hpp"
#include "sansio/script_fallback.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::detail {

/// What one node said to the extend script.
enum class extend_answer : std::uint8_t {
    extended,     ///< 1: ours, TTL raised
    other_value,  ///< 0: the key holds another value
    missing,      ///< -1: no key (restarted or evicted)
    failed,       ///< an error, a timeout, unreachable
};

/// The lock being extended, as the shell reads it when an event comes in.
struct extend_lock_view {
    bool empty = true;          ///< the handle holds no lock
    std::string_view resource;  ///< its first resource, for messages
    bool released = false;
    bool lost = false;
    bool adopted = false;  ///< validity unknown here (client::adopt)
    std::chrono::steady_clock::time_point valid_until;
};

/// What the extension was asked for, and the client's drift allowance.
struct extend_settings {
    std::chrono::milliseconds ttl{0};
    double drift_factor = 0.01;
    std::chrono::milliseconds drift_floor{2};
    /// What the nodes keep past the lock's validity (its lock-delay): taken
    /// off the TTL left they report.
    std::chrono::milliseconds node_extra{0};
    /// A semaphore's permit whose index is not known (adopted by value): its K.
    /// Each node then extends whichever permit holds the value there and says
    /// which ({ttl, permit}); a yes counts only for that permit, and the lease
    /// is confirmed only where one permit was extended on a majority (issue
    /// 36: yeses for different permits never add up). 0: one key, plain yeses.
    int permits = 0;
};

/// What the shell does after an event, in this order.
struct extend_actions {
    /// start: the extend script, as EVALSHA, to every node.
    bool send_extends = false;
    /// This node answered NOSCRIPT to EVALSHA: send it the EVAL form.
    std::optional<std::size_t> resend_as_eval;
    /// A straggler answered "missing" after the success: put the key back there.
    std::optional<std::size_t> repair_late;
    /// Extended: put the key back on every node missing(i) names (before the result).
    bool repair_missing = false;
    enum class ending : std::uint8_t {
        none,
        refused,   ///< nothing was sent: report failure_error() on a later loop turn
        extended,  ///< valid until `deadline`; report `remaining`
        failed,    ///< report failure_error(); the old deadline stands
    };
    ending end = ending::none;
    errc code = errc::not_held;  ///< refused, failed
    std::string message;         ///< refused, failed: the error's text, before the node list
    std::chrono::steady_clock::time_point deadline;  ///< extended
    std::chrono::milliseconds remaining{0};          ///< extended: from the decision's now
    std::chrono::nanoseconds took{0};  ///< extended, failed: for the latency histogram
};

class extend_decision {
public:
    explicit extend_decision(std::size_t nodes, extend_settings settings = {})
        : settings_{settings}, tally_{nodes}, missing_(nodes, false) {
        if (settings_.permits > 0) permit_tally_ = permit_tally{nodes, settings_.permits};
    }

    /// The extension is asked for at `now`: refused (a bad argument, or the
    /// lock no longer ours), or the extend script goes to every node.
    [[nodiscard]] auto start(const extend_lock_view& lock,
                             std::chrono::steady_clock::time_point now) -> extend_actions;
    /// Node `node` answered the call sent in form `sent` (or it timed out or
    /// failed), at `now`, with the lock as it is now.
    [[nodiscard]] auto on_reply(std::size_t node, script_form sent, const reply_event& event,
                                const extend_lock_view& lock,
                                std::chrono::steady_clock::time_point now) -> extend_actions;
    /// What a reply says, as an answer to the extend script.
    [[nodiscard]] static auto answer_of(const reply_event& event) noexcept -> extend_answer;
    /// The permit an extended node names ({ttl, permit}, a permit of unknown
    /// index); permit_tally::none for any other reply.
    [[nodiscard]] static auto permit_of(const reply_event& event) noexcept -> int;

    /// The error for an ending of refused or failed; `name_of(i)` names node i.
    template <class NameOf>
    [[nodiscard]] auto failure_error(const extend_actions& a, NameOf&& name_of) const -> error {
        if (a.end == extend_actions::ending::refused)
            return error{make_error_code(a.code), a.message, {}, 0};
        std::string text = a.message + " (" + std::to_string(confirmed()) + " of " +
                           std::to_string(missing_.size()) + " confirmed, " +
                           std::to_string(tally_.needed()) + " needed";
        reports_.append_problems(text, name_of);
        text += ")";
        return error{make_error_code(a.code), std::move(text), reports_.to_reports(name_of), 0};
    }
    /// What each node said (before the verdict).
    [[nodiscard]] auto nodes() const noexcept -> const node_outcomes& { return reports_; }

    /// Node `node` answered while the question was open. Returns the verdict:
    /// won once a majority confirmed, lost once that became impossible. With
    /// settings.permits, `permit` is the one it extended (permit_of), and a
    /// majority must have extended the same permit.
    [[nodiscard]] auto on_answer(std::size_t node, extend_answer a, int permit = permit_tally::none)
        -> quorum_tally::verdict;
    /// The verdict is known: later answers are not counted.
    [[nodiscard]] auto open() const noexcept -> bool { return open_; }

    /// Why a lost verdict failed: a majority that answered "not ours" is
    /// definite (not_held); otherwise too few answered (quorum_unreachable).
    [[nodiscard]] auto failure() const noexcept -> errc;

    /// The nodes to put the key back on, once the extension has succeeded:
    /// those that answered "missing". Never counted toward any quorum.
    [[nodiscard]] auto missing(std::size_t node) const noexcept -> bool {
        return node < missing_.size() && missing_[node];
    }
    /// After a success, a straggler that answers "missing" is repaired too.
    void mark_extended() noexcept { extended_ = true; }
    [[nodiscard]] auto repairs_late(extend_answer a) const noexcept -> bool {
        return extended_ && a == extend_answer::missing;
    }

    [[nodiscard]] auto tally() const noexcept -> const quorum_tally& { return tally_; }
    /// The nodes that confirmed: all the yeses, or with settings.permits those
    /// of the permit extended on the most nodes.
    [[nodiscard]] auto confirmed() const noexcept -> std::size_t {
        return settings_.permits > 0 ? permit_tally_.best() : tally_.yes_count();
    }

    /// The deadline after a won verdict, or why there is none.
    struct deadline_outcome {
        std::optional<std::chrono::steady_clock::time_point> deadline;
        const char* why = nullptr;  ///< when there is no deadline (errc::not_held)
    };
    struct deadline_inputs {
        bool adopted = false;  ///< validity unknown here (client::adopt)
        std::chrono::steady_clock::time_point old_deadline;
        std::chrono::steady_clock::time_point started;  ///< first request sent
        std::chrono::steady_clock::time_point now;      ///< majority confirmed
        std::chrono::milliseconds ttl{0};
        /// The least TTL left that the confirming majority reported (the
        /// scripts never shorten one, so it may exceed ttl); unset: ttl.
        std::optional<std::chrono::milliseconds> confirmed_left;
        double drift_factor = 0.01;
        std::chrono::milliseconds drift_floor{2};
    };
    [[nodiscard]] static auto new_deadline(const deadline_inputs& in) -> deadline_outcome;

    /// What a failed extend leaves of the lock, for the end of its message: it
    /// stays valid until its previous deadline, unless that deadline has passed
    /// by `now` (it expired) or is unknown here (an adopted lock: a majority
    /// that no longer holds its value means it expired or was released).
    [[nodiscard]] static auto after_failure(errc code, const extend_lock_view& lock,
                                            std::chrono::steady_clock::time_point now)
        -> std::string_view;

private:
    void record(std::size_t node, extend_answer answer, const reply_event& event);
    void conclude(quorum_tally::verdict verdict, const extend_lock_view& lock,
                  std::chrono::steady_clock::time_point now, extend_actions& a);
    void fail(errc code, std::string_view why, const extend_lock_view& lock,
              std::chrono::steady_clock::time_point now, extend_actions& a);

    extend_settings settings_;
    quorum_tally tally_;
    permit_tally permit_tally_;  // settings.permits only: the yeses per permit
    std::vector<bool> missing_;
    node_outcomes reports_;
    std::chrono::steady_clock::time_point started_;  // first request sent
    /// The least TTL left that a confirming node reported (before the verdict).
    std::optional<std::chrono::milliseconds> confirmed_left_;
    bool open_ = true;
    bool extended_ = false;
};

}  // namespace redlock::detail
