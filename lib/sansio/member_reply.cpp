#include "sansio/member_reply.hpp"

namespace redlock::detail {

auto decide_member_reply(const reply_event& event, const member_reply_input& in)
    -> member_reply_action {
    member_reply_action a;
    if (in.wait_answer) {
        // A command answered with an error (or redirected) was handed on or
        // resent already: its WAIT's answer belongs to nobody.
        a.step = in.holding ? member_step::judge_held : member_step::drop;
        return a;
    }
    if (event.status != request_status::reply) {
        // No answer: the node may be gone, or no longer the one to ask.
        a.refresh = event.status != request_status::stopped;
        return a;
    }
    if (auto redirect = read_redirection(event.answer)) {
        // A MOVED says the map is stale; an ASK is a migration in progress, which
        // the next map does not show either way.
        a.refresh = redirect->how == redirection::kind::moved;
        if (in.redirects >= max_redirects) return a;
        a.step = member_step::follow;
        a.to = std::move(redirect);
        return a;
    }
    a.refresh = calls_for_refresh(event.answer);
    if (in.replicated && !is_error(event.answer)) a.step = member_step::hold;
    return a;
}

}  // namespace redlock::detail
