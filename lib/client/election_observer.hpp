#pragma once

// client::observe's loop-side half (README, "Leader election"): one observer of
// one election. It registers in the election's observers hash on every node
// (an entry that expires unless refreshed, as a waiter's does) and in this
// client's waiter registry under an id of the waiters' form, "<client id>:e<n>",
// so that the release notifications' subscriber connections and routing carry
// the "<id>|~elect" messages that a campaign's win, a proclamation and a
// resignation publish to it. A message makes it read the leader on every node;
// it calls back when what a majority say has changed. One timer stands at the
// leader's validity end: a leader that crashed (nobody publishes; its key just
// expires) is reported gone then. A read that fewer than a majority answer is
// tried again after 100 ms, doubling to 2 s, until one is answered: what it was
// to find out (a message's news, a leader's end) is not lost with it.

#include "client/client_core.hpp"
#include "operations/waiter_registry.hpp"
#include "redlock/election.hpp"
#include "transport/timer_queue.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

class election_observer final : public waiter,
                                public std::enable_shared_from_this<election_observer> {
public:
    using callback = std::function<void(const election_view&)>;

    election_observer(const std::shared_ptr<client_core>& core, std::string name, callback cb);
    election_observer(const election_observer&) = delete;
    auto operator=(const election_observer&) -> election_observer& = delete;
    ~election_observer() = default;

    /// The handle client::observe returns, observing from now on (the first
    /// view is delivered once read, on the loop thread); invalid_argument for
    /// a name that is no lock's.
    [[nodiscard]] static auto begin(const std::shared_ptr<client_core>& core, std::string name,
                                    callback cb) -> result<observation>;
    /// Any thread. No callback runs once this returns (but from inside one).
    void stop() noexcept;

    // waiter: "<id>|~elect" arrived.
    void wake() override { read(); }
    auto begin_handoff() -> std::optional<handoff_offer> override { return std::nullopt; }
    void on_handoff_reply(std::uint32_t, std::size_t, const reply_event&) override {}
    /// Never offered a key (it is not a waiter for a lock): a hand-off message
    /// naming it is only news, as a wake-up is.
    void on_handed(std::size_t, std::uint32_t) override { read(); }

private:
    void start(op_context& ctx);
    void teardown(op_context& ctx);
    /// Reads every node (registering first when `watch`); one read at a time.
    void read(bool watch = false);
    void on_read(const result<std::vector<node_probe>>& probes);
    void arm_deadline(std::chrono::milliseconds in);
    /// After a read a majority did not answer: the deadline timer, at the retry delay.
    void arm_retry();
    void arm_refresh();
    /// Until the subscriber connections confirm, a message could be missed: one
    /// more read once they do.
    void await_subscribed(int checks_left);

    std::weak_ptr<client_core> core_;
    std::string name_;
    std::string id_;
    op_context* ctx_ = nullptr;  // loop thread, between start and teardown
    // Loop thread.
    bool reading_ = false;
    bool again_ = false;
    bool delivered_ = false;
    std::optional<leader_info> last_;
    // Reads in a row that a majority did not answer: the next is tried after
    // reconnect_delay's backoff (100 ms doubling to 2 s, jittered).
    unsigned failed_reads_ = 0;
    std::optional<timer_queue::key> deadline_;
    std::optional<timer_queue::key> refresh_;
    std::optional<timer_queue::key> subscribe_check_;
    // Any thread: the callback, and whether it may still run.
    std::recursive_mutex callback_mutex_;
    callback callback_;
};

}  // namespace redlock::detail
