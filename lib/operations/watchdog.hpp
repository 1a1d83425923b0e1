#pragma once

#include "operations/session_keeper.hpp"
#include "redlock/client.hpp"
#include "sansio/renewal_decision.hpp"
#include "transport/timer_queue.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

class op_context;
struct lock_state;

/// A lost lock's best-effort release, once its validity has ended
/// (lost_release_delay): at once if it has, else on a timer, then through the
/// host's release_lost. Not if its holder released it meanwhile. The watchdog's
/// loss and a session's both let go of their locks this way.
void release_when_invalid(op_context& ctx, std::shared_ptr<lock_state> state);

/// Keeps auto-renewed locks alive (as Redisson's watchdog does), on the loop
/// thread and its timers: no thread per lock.
///
/// Each lock is extended once `renew_fraction` of its TTL has passed since the
/// last successful acquire or extend. A failed renewal is retried while the
/// validity lasts. The lock is marked lost — flag, stop token, on_lost callback
/// — as soon as a majority says it no longer holds it, or when its validity
/// ends with no renewal through. A holder is thus never told it holds a lock
/// past its validity deadline. The error names each node's answer to the last
/// renewal; then, once its validity has ended, a best-effort release frees
/// what the nodes still hold of it (release_when_invalid).
/// The I/O shell around renewal_decision (one per lock), which decides all of
/// that; this runs its timers and extensions and performs the loss.
///
/// Each renewal also sends TIME to every node, ahead of the extend on the same
/// connection (node_trust judges the node's clock by it). A node whose clock
/// was seen stepping since the lock's last renewal no longer counts: the
/// holder is told (on_shrunk) when the renewal goes through anyway, and the
/// loss report names it when it does not.
///
/// A lock acquired in a session is not watched on its own: the session's
/// keeper (session_keeper) renews it with the session's other locks.
class watchdog {
public:
    explicit watchdog(op_context& ctx)
        : ctx_{ctx}, sessions_{ctx, [this](std::shared_ptr<lock_state> state, const error& why) {
                                   mark_lost(std::move(state), why);
                               }} {}

    void watch(std::shared_ptr<lock_state> state);
    /// Stops renewing (release). Nothing is reported.
    void forget(const lock_state* state);
    /// Stops renewing everything (shutdown). Nothing is reported.
    void forget_all();
    [[nodiscard]] auto size() const noexcept -> std::size_t { return entries_.size(); }

private:
    struct entry {
        std::shared_ptr<lock_state> state;
        std::uint64_t generation = 0;
        timer_queue::key renew_timer{};
        timer_queue::key deadline_timer{};
        renewal_decision decision;
        /// Clock steps seen before this were told already (or came before the lock).
        std::chrono::steady_clock::time_point told_through;
    };

    /// The watchdog's only clock read: every entry point passes it to the decision.
    [[nodiscard]] static auto now() noexcept -> std::chrono::steady_clock::time_point;
    [[nodiscard]] static auto view_of(const lock_state& state) noexcept -> renewal_lock_view;
    /// `stepped`: nodes whose clock stepped since the last renewal, for the loss report.
    void perform(entry& e, const renewal_actions& a, const std::vector<node_report>& stepped = {});
    /// The nodes whose clock was seen stepping since `e` was last told, as reports
    /// name them; the entry counts them as told.
    [[nodiscard]] auto stepped_nodes(entry& e) -> std::vector<node_report>;
    static void tell_shrunk(const std::shared_ptr<lock_state>& state,
                            std::vector<node_report> stepped);
    void renew_timer_fired(const lock_state* key, std::uint64_t generation);
    void deadline_timer_fired(const lock_state* key, std::uint64_t generation);
    void on_extended(const lock_state* key, std::uint64_t generation,
                     result<std::chrono::milliseconds> outcome);
    void mark_lost(std::shared_ptr<lock_state> state, const error& why);
    [[nodiscard]] auto find(const lock_state* key, std::uint64_t generation) -> entry*;
    void stop(entry& e);

    op_context& ctx_;
    session_keeper sessions_;
    std::unordered_map<const lock_state*, entry> entries_;
    std::uint64_t next_generation_ = 0;
};

}  // namespace redlock::detail
