#include "transport/node_trust.hpp"

#include "transport/node_connection.hpp"

#include <algorithm>

namespace redlock::detail {

using std::chrono::milliseconds;

void node_trust::after_handshake(const node_handshake::restart& r,
                                 std::optional<std::int64_t> node_us, time_point sent,
                                 time_point received) {
    std::string line;
    if (r.restarted) {
        all_.restarts.fetch_add(1, std::memory_order_relaxed);
        // Another process, perhaps on another machine behind the same address:
        // its clock owes nothing to the old one's (and it is quarantined as a
        // restart already when it does not persist).
        watch_.reset();
        if (r.quarantine.count() > 0)
            quarantine(r.quarantine, received, "restarted without persisting every write");
        line = r.warning;
    }
    if (node_us) {
        std::string step = judge({.node_us = *node_us, .sent = sent, .received = received});
        if (!step.empty()) line = std::move(step);
    }
    if (!line.empty()) warn(line);
}

void node_trust::on_reply(std::uint32_t tag, const reply_event& event) noexcept {
    try {
        const std::string line = probe_answered(tag, event, std::chrono::steady_clock::now());
        if (!line.empty()) warn(line);
    } catch (...) {
        // Out of memory, or the logger threw: the count and the quarantine stand.
    }
}

void node_trust::warn(const std::string& line) const {
    log_warning(config_, "redlock: node " + name_ + ": " + line);
}

auto node_trust::probe_sent(time_point now) -> std::uint32_t {
    const std::uint32_t number = next_probe_++ & 0xFFFFU;
    probes_.emplace_back(number, now);
    return number;
}

auto node_trust::probe_answered(std::uint32_t tag, const reply_event& event, time_point now)
    -> std::string {
    // Every probe is answered once, in order; one that failed or timed out
    // left before this one, so whatever is older is dropped on the way.
    std::optional<time_point> sent;
    while (!probes_.empty() && !sent) {
        if (probes_.front().first == tag) sent = probes_.front().second;
        probes_.pop_front();
    }
    // A probe that was not answered proves nothing about the clock.
    if (!sent || event.status != request_status::reply) return {};
    const std::optional<std::int64_t> node_us = time_of(event.answer);
    if (!node_us) return {};
    return judge({.node_us = *node_us, .sent = *sent, .received = now});
}

auto node_trust::judge(const clock_sample& s) -> std::string {
    const clock_verdict v = watch_.observe(
        s, {.drift_factor = config_.clock_drift_factor, .floor = config_.clock_drift_floor});
    if (!v.stepped()) return {};
    all_.clock_steps.fetch_add(1, std::memory_order_relaxed);
    node_.clock_steps.fetch_add(1, std::memory_order_relaxed);
    // The delayed-restart rule's period: every lock granted before the step
    // has ended on its holder's monotonic clock before this node's word counts.
    const milliseconds q =
        std::max(config_.restart_quarantine.value_or(config_.lock.ttl), milliseconds{0});
    const clock_step_note note{.seen = s.received, .verdict = v, .quarantine = q};
    std::string line = note.describe() + " between two TIME answers (beyond the " +
                       std::to_string(v.allowance.count()) +
                       " ms of drift the interval allows; keys expire on its clock" +
                       (v.result == clock_verdict::kind::forward ? ", so early there)" : ")");
    if (q.count() > 0) {
        quarantine(q, s.received, note.describe());
        line += "; its grants are not counted for " + std::to_string(q.count()) +
                " ms, as after a restart";
    } else {
        line += "; restart_quarantine is 0, so its grants still count";
    }
    last_step_ = note;
    return line;
}

void node_trust::quarantine(milliseconds d, time_point from, std::string why) {
    until_ = std::max(until_, from + d);
    cause_ = std::move(why);
}

}  // namespace redlock::detail
