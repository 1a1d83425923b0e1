#include "operations/node_port.hpp"

#include "transport/quorum_member.hpp"

namespace redlock::detail {

auto node_port::send(std::string_view encoded, reply_sink* sink, std::uint32_t tag,
                     std::uint16_t slot, bool replicated) const -> std::uint32_t {
    return member_->send(encoded, sink, tag, slot, replicated);
}

auto node_port::disown(std::uint32_t number, const reply_sink* sink) const noexcept -> bool {
    return member_->disown(number, sink);
}

auto node_port::topology() const -> std::vector<std::string> {
    const routed_member* routed = member_->routed();
    return routed != nullptr ? routed->topology() : std::vector<std::string>{};
}

auto node_port::tls(std::uint16_t slot) const -> std::optional<tls_info> {
    const node_connection* c = member_->serving(slot);
    return c != nullptr ? c->tls() : std::nullopt;
}

auto node_port::name() const noexcept -> const node_name& {
    return member_->report_name();
}

auto node_port::quarantined_until(std::uint16_t slot) const noexcept
    -> std::chrono::steady_clock::time_point {
    return member_->quarantined_until(slot);
}

auto node_port::quarantine_cause(std::uint16_t slot) const -> std::string {
    const node_connection* c = member_->serving(slot);
    if (c != nullptr && !c->trust().cause().empty() &&
        c->quarantined_until() > std::chrono::steady_clock::now())
        return c->trust().cause();
    // A cluster's failover, or a Sentinel master that changed.
    return "a new master, or restarted without persisting every write";
}

void node_port::probe_clock(std::uint16_t slot) const {
    if (node_connection* c = member_->serving(slot)) c->probe_clock();
}

auto node_port::clock_step(std::uint16_t slot) const -> std::optional<clock_step_note> {
    const node_connection* c = member_->serving(slot);
    return c != nullptr ? c->trust().last_step() : std::nullopt;
}

}  // namespace redlock::detail
