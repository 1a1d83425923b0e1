#pragma once

// Leader election on the quorum (README, "Leader election"): client::campaign
// waits until this client leads an election and hands back a `leadership`;
// client::leader reads who leads; client::observe follows every change.
//
// An election named N is the exclusive lock on resource N, taken with a
// fencing token and auto-renewed, next to a leader key that holds the term and
// the leader's proclaimed value (key layout: README, "Key layout").

#include "redlock/error.hpp"
#include "redlock/export.hpp"
#include "redlock/lock.hpp"
#include "redlock/result.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

namespace redlock {

namespace detail {
struct leadership_state;
class election_observer;
}  // namespace detail

class leadership;
struct release_report;  // client.hpp

/// The longest proposal (a leader's value), in bytes.
inline constexpr std::size_t max_proposal_length = 64 * 1024;

/// client::campaign's choices. Every unset field takes the client's default.
struct campaign_options {
    /// The leadership lock's TTL (renewed in the background while leading).
    std::optional<std::chrono::milliseconds> ttl{};
    /// Give up waiting after this long (errc::contended). Unset: wait until
    /// cancelled (client::cancel, or the stop token), or the client stops.
    std::optional<std::chrono::milliseconds> max_wait{};
    /// Who campaigns, for people (lock_options::holder). Unset: "<host
    /// name>:<pid> (<program name>)".
    std::optional<std::string> holder{};
    /// Runs once, on the loop thread, when the leadership is lost (its lock's
    /// renewals could not reach a majority in time, or it was broken), if a
    /// `leadership` handle still exists then. Keep one while leading: a
    /// leadership whose handles are all gone is still renewed, until the
    /// client stops, and nobody can resign it.
    std::function<void(const leadership&, const error&)> on_lost{};
};

/// The leader a majority of the nodes agree on.
struct leader_info {
    std::uint64_t term = 0;  ///< the leadership's fencing token
    std::string value;       ///< its newest proclaimed value (the proposal, at first)
    std::string holder;      ///< the holder text of its lock
    /// How long a majority still hold the leadership if it is not renewed:
    /// when an observer next looks (a leader that crashed is gone then).
    std::chrono::milliseconds validity{0};
    /// Proclamations since the term began (0: the proposal).
    std::uint64_t proclaimed = 0;
};

/// What client::leader found: the leader, if a majority agree on one.
struct election_view {
    std::string name;
    std::optional<leader_info> leader;  ///< empty: no leader
    std::uint64_t highest_term = 0;     ///< the highest term any node has seen
    std::size_t agreeing = 0;           ///< nodes agreeing on the leader
    std::size_t answered = 0;
    std::size_t quorum = 0;
};

/// This client leads an election: the handle client::campaign hands back. A
/// cheap copyable handle; copies share the state. Thread-safe.
///
/// Underneath it is an auto-renewed lock: it stays valid while renewals reach
/// a majority, and is lost (lost(), on_lost, lost_token()) when they cannot.
/// Act as the leader only while valid(), and pass term() to whatever the
/// leader writes to, which should reject lower terms than it has seen.
class REDLOCK_API leadership {
public:
    leadership() = default;  ///< an empty handle: valid() is false

    [[nodiscard]] auto name() const -> const std::string&;
    /// The fencing token obtained on the quorum when this client won: strictly
    /// greater than every earlier leader's term of this election.
    [[nodiscard]] auto term() const noexcept -> std::uint64_t;
    /// The value last proclaimed (the proposal, at first).
    [[nodiscard]] auto value() const -> std::string;
    /// The lock underneath (valid_until, remaining, holder, ...).
    [[nodiscard]] auto held() const -> const lock&;
    [[nodiscard]] auto valid() const noexcept -> bool;
    [[nodiscard]] auto lost() const noexcept -> bool;
    [[nodiscard]] auto lost_token() const noexcept -> std::stop_token;
    [[nodiscard]] auto empty() const noexcept -> bool { return !state_; }

    /// Replaces the leader's value on a majority, in the same term; observers
    /// hear of it. A node stores it only while it holds this leadership's lock
    /// (a compare by the lock's value), so a deposed leader cannot proclaim:
    /// errc::not_held. Also: quorum_unreachable, invalid_argument (too long),
    /// client_stopped.
    void proclaim_async(std::string value, std::function<void(result<void>)> done);
    auto proclaim(std::string value) -> result<void>;
    /// Steps down: the leader key is cleared, observers told, and the lock
    /// released (waking the next candidate in line). Errors as release's.
    void resign_async(std::function<void(result<release_report>)> done);
    auto resign() -> result<release_report>;

private:
    friend struct detail::leadership_state;
    explicit leadership(std::shared_ptr<detail::leadership_state> state) noexcept
        : state_{std::move(state)} {}

    std::shared_ptr<detail::leadership_state> state_;
};

/// Follows an election while it lives (client::observe): destroying it, or
/// stop(), ends the observation; the callback is not called once stop()
/// returns on another thread than the loop's (or at all after it, on the loop).
class [[nodiscard]] REDLOCK_API observation {
public:
    observation() = default;
    observation(observation&&) noexcept;
    auto operator=(observation&&) noexcept -> observation&;
    observation(const observation&) = delete;
    auto operator=(const observation&) -> observation& = delete;
    ~observation();

    void stop() noexcept;
    [[nodiscard]] auto active() const noexcept -> bool { return observer_ != nullptr; }

private:
    friend class detail::election_observer;
    explicit observation(std::shared_ptr<detail::election_observer> observer) noexcept
        : observer_{std::move(observer)} {}

    std::shared_ptr<detail::election_observer> observer_;
};

}  // namespace redlock
