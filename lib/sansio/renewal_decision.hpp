#pragma once

// The decisions of the watchdog for one auto-renewed lock, with no I/O: when
// a renewal is sent and when the next is due, when the lock counts as lost,
// and what the loss report holds. Timer expiries and the renewals' outcomes
// come in as events, with the time and the lock's deadline as values; what to
// send, (re)schedule and report goes out as actions. watchdog is the shell.
// tests/unit/renewal_decision_test.cpp plays every renewal outcome, reply
// combination and timer order on 1, 3, 5 and 7 nodes.
//
// The rules: a renewal goes out `renew_fraction` of the TTL after the last
// successful acquire or extend, one at a time. A renewal that failed for lack
// of answers is retried soon (renew_retry_gap) while the validity lasts. The
// lock is lost as soon as a renewal is refused (a majority no longer hold it,
// or it could not be asked), or when its validity ends with no renewal
// through — never later, so a holder is never told it holds a lock past its
// deadline. A lock released meanwhile is not lost: it is only forgotten.

#include "redlock/error.hpp"
#include "redlock/result.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redlock::detail {

/// How long a lost lock's own keys are left alone before they are deleted: until
/// the validity its holder was promised has ended (0: at once). The holder hears of
/// the loss on the loop thread while it may be acting on that promise; deleting its
/// keys earlier could hand the resource to a waiter inside it. (A torture run of
/// 2026-11-28: a reader was found lost when a failover had dropped its key on one
/// cluster member and its client quarantined another, and its release handed the
/// lock to a writer 246 ms before the reader's validity ended.) Rounded up; the shell
/// asks again when its timer fires, as the timers' clock may lag the steady clock.
[[nodiscard]] auto lost_release_delay(std::chrono::steady_clock::time_point valid_until,
                                      std::chrono::steady_clock::time_point now) noexcept
    -> std::chrono::milliseconds;

struct renewal_settings {
    std::size_t nodes = 1;
    std::chrono::milliseconds ttl{0};  ///< the lock's, asked for again at each renewal
    double renew_fraction = 1.0 / 3.0;
    std::chrono::milliseconds request_timeout{50};
};

/// The lock as the watchdog reads it when an event comes in.
struct renewal_lock_view {
    std::chrono::steady_clock::time_point valid_until;
    bool released = false;  ///< a release was asked for (perhaps on another thread)
};

/// Why a watched lock was lost.
enum class loss_cause : std::uint8_t {
    refused,         ///< a renewal was refused: not held on a majority, or not askable
    validity_ended,  ///< the validity ended with no renewal through
};

/// What a loss reports, besides the lock's name.
struct renewal_loss {
    loss_cause cause = loss_cause::validity_ended;
    std::string reason;  ///< after "lock on '<resource>' lost: "
    /// Each node's answer to the last renewal that was answered; empty when a
    /// deadline passed before any renewal failed (then every node is pending).
    std::vector<node_report> nodes;
    bool renewal_in_flight = false;  ///< validity_ended: a renewal was still unanswered
};

/// What the watchdog does after an event, in this order.
struct renewal_actions {
    bool send_extend = false;  ///< renew now: extend by settings.ttl
    bool renewed = false;      ///< a renewal went through: count it (client_stats)
    std::optional<std::chrono::milliseconds> renew_in;     ///< (re)schedule the renewal
    std::optional<std::chrono::milliseconds> deadline_in;  ///< (re)arm the deadline timer
    enum class ending : std::uint8_t {
        none,
        forget,  ///< stop watching, report nothing (released meanwhile)
        lost,    ///< stop watching, mark it lost and report `loss`
    };
    ending end = ending::none;
    renewal_loss loss;
};

class renewal_decision {
public:
    explicit renewal_decision(renewal_settings settings) : settings_{settings} {}

    /// Watching starts, just after the grant: the first renewal and the deadline.
    [[nodiscard]] auto start(const renewal_lock_view& lock,
                             std::chrono::steady_clock::time_point now) const -> renewal_actions;
    /// The renewal timer fired: renew, unless a renewal is in flight.
    [[nodiscard]] auto on_renew_timer() -> renewal_actions;
    /// The renewal answered (`outcome` of the extension), at `now`, with the
    /// lock as it is now (a success has moved its deadline already).
    [[nodiscard]] auto on_extended(const result<std::chrono::milliseconds>& outcome,
                                   const renewal_lock_view& lock,
                                   std::chrono::steady_clock::time_point now) -> renewal_actions;
    /// The deadline timer fired at `now`: lost if the validity has ended,
    /// otherwise (early, or the deadline moved) wait for it as it stands.
    [[nodiscard]] auto on_deadline_timer(const renewal_lock_view& lock,
                                         std::chrono::steady_clock::time_point now) const
        -> renewal_actions;

    [[nodiscard]] auto renewing() const noexcept -> bool { return renewing_; }
    /// The answers kept for a loss at the deadline (the last failed renewal's).
    [[nodiscard]] auto last_nodes() const noexcept -> const std::vector<node_report>& {
        return last_nodes_;
    }

    /// The error on_lost receives for `loss` of the lock on `resource`;
    /// `name_of(i)` names node i (for the nodes reported pending).
    template <class NameOf>
    [[nodiscard]] auto loss_error(const renewal_loss& loss, std::string_view resource,
                                  NameOf&& name_of) const -> error {
        std::vector<node_report> nodes = loss.nodes;
        if (loss.cause == loss_cause::validity_ended && nodes.empty()) {
            // No renewal has failed yet: the one in flight has had no answer
            // from enough nodes (hung ones, say) to be decided.
            nodes.reserve(settings_.nodes);
            for (std::size_t i = 0; i < settings_.nodes; ++i) {
                nodes.push_back(
                    {name_of(i), node_status::pending,
                     loss.renewal_in_flight ? "no answer yet to the renewal in flight" : ""});
            }
        }
        return error{make_error_code(errc::lock_lost),
                     "lock on '" + std::string{resource} + "' lost: " + loss.reason,
                     std::move(nodes), 0};
    }

private:
    [[nodiscard]] static auto until(const renewal_lock_view& lock,
                                    std::chrono::steady_clock::time_point now) noexcept
        -> std::chrono::milliseconds;
    [[nodiscard]] auto lost(const renewal_lock_view& lock, renewal_loss loss) const
        -> renewal_actions;

    renewal_settings settings_;
    bool renewing_ = false;
    /// Each node's answer to the last renewal that failed: what a loss at the
    /// deadline reports.
    std::vector<node_report> last_nodes_;
};

}  // namespace redlock::detail
