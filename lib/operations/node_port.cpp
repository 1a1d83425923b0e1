#include "operations/node_port.hpp"

#include "transport/quorum_member.hpp"
#include "transport/sentinel_router.hpp"

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

auto node_port::serving_name(std::uint16_t slot) const -> std::string {
    if (member_->routed() == nullptr) return {};
    const node_connection* c = member_->serving(slot);
    return c != nullptr ? c->name() : std::string{};
}

auto node_port::settling(std::uint16_t slot) const noexcept -> bool {
    return member_->settling(slot);
}

void node_port::missed_grant(const client_config& config, std::string_view why) const {
    member_->missed_grant(config, why);
}

namespace {

auto sentinel_router_of(const quorum_member& member) noexcept -> const sentinel_router* {
    return dynamic_cast<const sentinel_router*>(member.routed());
}

}  // namespace

auto node_port::sentinel_count() const noexcept -> std::size_t {
    const sentinel_router* s = sentinel_router_of(*member_);
    return s != nullptr ? s->sentinel_links().size() : 0;
}

auto node_port::sentinel_name(std::size_t i) const -> std::string {
    return i < sentinel_count() ? sentinel_router_of(*member_)->sentinel_links()[i]->name()
                                : std::string{};
}

auto node_port::send_to_sentinel(std::size_t i, std::string_view encoded, reply_sink* sink,
                                 std::uint32_t tag) const -> std::uint32_t {
    return sentinel_router_of(*member_)->sentinel_links().at(i)->send(encoded, sink, tag);
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
