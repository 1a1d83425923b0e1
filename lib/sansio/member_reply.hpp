#pragma once

// What a cluster or Sentinel member does with one answer from a node, before
// the operation that asked hears of it (transport/routed_member performs it):
// hand it on, hold a write's answer until WAIT's arrives, follow a MOVED or an
// ASK to another node, or drop an answer nobody waits for any more; and whether
// the member should read its topology again.

#include "sansio/cluster_replies.hpp"
#include "sansio/reply.hpp"

#include <cstdint>
#include <optional>

namespace redlock::detail {

/// A request follows at most this many redirections; the next one is handed
/// on as the error it is (a cluster that keeps moving a slot is not settled).
inline constexpr std::uint8_t max_redirects = 5;

struct member_reply_input {
    bool wait_answer = false;    ///< this is WAIT's answer, not the command's
    bool holding = false;        ///< the command's answer is held, awaiting WAIT's
    bool replicated = false;     ///< the command is a write that wait_replicas guards
    std::uint8_t redirects = 0;  ///< redirections already followed
};

enum class member_step : std::uint8_t {
    forward,     ///< hand the event on as it is
    hold,        ///< keep the command's answer; WAIT's decides (replica_ack)
    judge_held,  ///< WAIT's answer: hand on the held answer, or its failure (replica_ack)
    follow,      ///< send again to `to` (after ASKING when it is an ASK)
    drop,        ///< nobody waits for this any more
};

struct member_reply_action {
    member_step step = member_step::forward;
    std::optional<redirection> to;  ///< with follow
    bool refresh = false;           ///< read the slot map (or ask the sentinels) again soon
};

[[nodiscard]] auto decide_member_reply(const reply_event& event, const member_reply_input& in)
    -> member_reply_action;

}  // namespace redlock::detail
