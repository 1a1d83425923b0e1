#pragma once

// The one rule for a script a node no longer has cached (restarted, SCRIPT
// FLUSH): a call sent as EVALSHA that comes back NOSCRIPT is sent to that node
// again as EVAL, which runs the script and caches it there. Every other reply
// (an EVAL's NOSCRIPT included, which cannot be cured by resending) is the
// node's answer. acquire_op, extend_op and release_op ask this, and nothing
// else, whether to resend; tests/unit/script_fallback_test.cpp plays every case.

#include "sansio/reply.hpp"

#include <cstdint>

namespace redlock::detail {

/// How a script call was sent.
enum class script_form : std::uint8_t { evalsha, eval };

/// What a reply to a script call means for its sender.
enum class script_reply : std::uint8_t {
    resend_as_eval,  ///< not run: send the same call to the same node as EVAL
    answer,          ///< the node's answer (or the transport's failure): decide on it
};

[[nodiscard]] constexpr auto script_form_of(bool eval) noexcept -> script_form {
    return eval ? script_form::eval : script_form::evalsha;
}

[[nodiscard]] inline auto after_script_reply(script_form sent, const reply_event& event) noexcept
    -> script_reply {
    const bool noscript = event.status == request_status::reply && is_noscript(event.answer);
    return sent == script_form::evalsha && noscript ? script_reply::resend_as_eval
                                                    : script_reply::answer;
}

}  // namespace redlock::detail
