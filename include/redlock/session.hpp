#pragma once

#include "redlock/error.hpp"
#include "redlock/export.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace redlock {

namespace detail {
struct session_state;
}

/// What a session's holder is told, once, when the session is lost: its
/// renewals could not reach a majority of nodes before the validity of its
/// locks ended (README, "Sessions").
struct session_loss {
    /// "session 3f…:s1 lost: 412 locks …: no renewal reached a majority …".
    std::string message;
    /// The resource of every lock the session held, each marked lost.
    std::vector<std::string> resources;
    /// Each node's answer to the last renewal that failed.
    std::vector<node_report> nodes;
};

/// Per-session choices. Unset fields take the client's configured defaults.
struct session_options {
    /// The TTL of every lock in the session (lock.ttl_ms by default); renewed
    /// together every `lock.renew_fraction` of it.
    std::optional<std::chrono::milliseconds> ttl{};
    /// Runs once, on the loop thread, when the session is lost (its locks are
    /// marked lost first). A lock that is lost on its own while the session
    /// lives (a majority no longer holds it: broken, say) is reported through
    /// its own lock_options::on_lost instead.
    std::function<void(const session_loss&)> on_lost{};
};

/// What closing a session did.
struct session_close_report {
    std::size_t locks = 0;     ///< locks the session held when it was closed
    std::size_t released = 0;  ///< of which a majority deleted
};

/// A lease shared by many locks (client::open_session): one renewal per node
/// per tick renews every lock in it, and one signal reports their loss. A
/// cheap, copyable handle; all members are safe to call from any thread.
class REDLOCK_API session {
public:
    session() = default;  ///< an empty handle, naming no session

    /// "<client id>:s<n>", unique among this client's sessions.
    [[nodiscard]] auto id() const -> const std::string&;
    /// The TTL its locks are acquired and renewed with.
    [[nodiscard]] auto ttl() const noexcept -> std::chrono::milliseconds;
    /// How many locks it holds now.
    [[nodiscard]] auto size() const -> std::size_t;
    /// True once it is lost: every lock it held is lost too.
    [[nodiscard]] auto lost() const noexcept -> bool;
    /// True once closed (client::close_session) or lost: no lock joins it any more.
    [[nodiscard]] auto closed() const noexcept -> bool;
    /// Requested when the session is lost.
    [[nodiscard]] auto lost_token() const noexcept -> std::stop_token;
    [[nodiscard]] auto empty() const noexcept -> bool { return !state_; }

    /// For the library: the shared state behind the handle.
    [[nodiscard]] auto state() const noexcept -> const std::shared_ptr<detail::session_state>& {
        return state_;
    }
    explicit session(std::shared_ptr<detail::session_state> state) noexcept
        : state_{std::move(state)} {}

private:
    std::shared_ptr<detail::session_state> state_;
};

}  // namespace redlock
