#pragma once

#include "operations/session_renew_op.hpp"
#include "transport/timer_queue.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

class op_context;
struct lock_state;
struct session_state;

/// Keeps the locks of each session alive with one renewal round per tick
/// (session_renew_op: one script call per node for all of them), on the loop
/// thread and its timers. The I/O shell of session_renewal.hpp: it starts the
/// rounds, applies what each decided (new deadlines, locks lost on their own),
/// and loses the whole session — every lock marked lost, one on_lost — when a
/// lock's validity ends with no round through. The watchdog owns it and hands
/// it the locks acquired in a session.
class session_keeper {
public:
    /// How a lock lost on its own is lost (the watchdog's mark_lost: its
    /// on_lost, then a best-effort release).
    using lose_one = std::function<void(std::shared_ptr<lock_state>, const error&)>;

    session_keeper(op_context& ctx, lose_one lose) : ctx_{ctx}, lose_one_{std::move(lose)} {}

    /// A lock just acquired in `session` joins it.
    void join(std::shared_ptr<lock_state> state, std::shared_ptr<session_state> session);
    /// `state` leaves its session (released). Nothing is reported.
    void forget(const lock_state* state);
    /// Stops every session (shutdown): nothing is reported.
    void forget_all();

private:
    struct entry {
        std::shared_ptr<session_state> session;
        std::uint64_t generation = 0;
        timer_queue::key renew_timer{};
        timer_queue::key deadline_timer{};
        /// When the deadline timer fires (nullopt: not armed).
        std::optional<std::chrono::steady_clock::time_point> deadline_at;
        bool in_flight = false;
        std::vector<node_report> last_nodes;  ///< the last round's, for a loss
    };

    [[nodiscard]] static auto now() noexcept -> std::chrono::steady_clock::time_point;
    [[nodiscard]] auto find(const session_state* key, std::uint64_t generation) -> entry*;
    void renew(const session_state* key, std::uint64_t generation);
    void on_round(const session_state* key, std::uint64_t generation, session_round round);
    void check_deadline(const session_state* key, std::uint64_t generation);
    /// Arms the deadline timer for the earliest deadline of the session's locks.
    void arm_deadline(entry& e);
    void arm_deadline_at(entry& e, std::chrono::steady_clock::time_point at);
    void lose_session(entry& e);
    void stop(entry& e);

    op_context& ctx_;
    lose_one lose_one_;
    std::unordered_map<const session_state*, entry> entries_;
    std::uint64_t next_generation_ = 0;
};

}  // namespace redlock::detail
