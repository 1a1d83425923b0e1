#pragma once

// What an acquisition sends, for each kind of lock — the grant (SET NX, or a
// script), the fencing confirm, the dequeue — and what the nodes' answers to
// them mean. acquire_op makes one for a command or an answer: it keeps nothing.

#include "operations/lock_commands.hpp"
#include "redlock/config.hpp"
#include "sansio/acquire_decision.hpp"
#include "sansio/command.hpp"
#include "sansio/node_outcomes.hpp"
#include "sansio/reply.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace redlock::detail {

struct lock_state;

/// A waiting acquisition's entry in each node's queue, as its grant names it.
struct queue_entry {
    std::string waiter_id;
    std::string liveness_text;  ///< waiter_ttl in ms: how long the entry lives unrefreshed
    std::string arrival_text;   ///< the queue score: the same on every node
    /// The attempt's number, under which its grant leaves an offer on a node that
    /// queues it (the hand-off across clients); empty for a waiter that leaves none.
    std::string offer_text;
    bool offers = false;  ///< it leaves offers: its leaving releases what one was handed
    /// Its first attempt: nothing of it is on any node yet (no queue entry, no offer), so a
    /// grant has nothing to clean up after it (wait_acquire_source's ARGV[8]).
    bool first_attempt = false;

    /// Numbers the attempt about to be sent.
    void number(std::uint32_t attempt) {
        first_attempt = attempt == 1;
        if (offers) offer_text = std::to_string(attempt);
    }
};

class grant_commands {
public:
    /// How the lock is asked for, fixed from the acquisition's start.
    struct shape {
        bool scripted = false;    ///< several resources, fencing, a reader or a permit
        bool fencing = false;     ///< a writer that raises the fence counter (round 2)
        bool read_fence = false;  ///< a reader that reads the fence counter
        wait_mode mode = wait_mode::targeted;
    };

    /// `queue`: the entry of a waiting acquisition, null for one that does not wait.
    grant_commands(const key_space& keys, const lock_state& lock, shape how,
                   const queue_entry* queue) noexcept
        : keys_{keys}, lock_{lock}, how_{how}, queue_{queue} {}

    /// A plain `SET key value NX PX ttl`, which has no EVAL form.
    [[nodiscard]] auto plain_set() const noexcept -> bool {
        return queue_ == nullptr && !how_.scripted;
    }
    /// The grant of an attempt; a semaphore scans from `first_permit`.
    [[nodiscard]] auto grant(bool eval, int first_permit) const -> encoded_command;
    /// Round 2 of a fenced grant: raise the counter to `token`, and check the key
    /// (a campaign's also proclaims: lock_state::proclamation).
    [[nodiscard]] auto confirm(std::uint64_t token, bool eval) const -> encoded_command;
    /// Leave the queue (as EVAL: it may run long after we stopped waiting), and,
    /// for a waiter that leaves offers, release what a release handed it unheard.
    [[nodiscard]] auto dequeue() const -> encoded_command;

    /// A node's answer to the grant: granted, refused, or failed, and what else
    /// the kind of lock reads from it. The caller discounts a quarantined node's yes.
    [[nodiscard]] auto grant_answer_of(const reply_event& event) const -> grant_answer;
    /// Its outcome alone (a straggler's, for the failure report).
    [[nodiscard]] auto grant_outcome(const reply_event& event) const -> node_outcome;
    /// Its answer to the fencing confirm.
    [[nodiscard]] static auto confirm_outcome(const reply_event& event) -> node_outcome;
    /// Its answer to a release that handed the lock to us (release_wake_script's
    /// 2: granted; 3, 1 or 0: released to a waiter ahead of us, or not held there).
    [[nodiscard]] static auto handoff_answer_of(const reply_event& event) -> grant_answer;
    /// Several resources: the one a node's refusal says is held ({0, counter, index}).
    [[nodiscard]] auto held_resource(const reply_event& event) const -> std::optional<std::size_t>;

private:
    [[nodiscard]] auto permit_grant(bool eval, std::string_view ttl_text, int first_permit) const
        -> encoded_command;

    const key_space& keys_;
    const lock_state& lock_;
    shape how_;
    const queue_entry* queue_;
};

}  // namespace redlock::detail
