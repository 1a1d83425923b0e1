#include "operations/check_op.hpp"

#include "operations/op_context.hpp"
#include "sansio/command.hpp"
#include "sansio/reply.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

namespace redlock::detail {
namespace {

constexpr std::size_t all_slots = 16384;

auto encode_all(const std::vector<std::vector<std::string>>& commands)
    -> std::vector<encoded_command> {
    std::vector<encoded_command> encoded;
    encoded.reserve(commands.size());
    for (const auto& command : commands) {
        const std::vector<std::string_view> argv{command.begin(), command.end()};
        encoded.emplace_back(argv);
    }
    return encoded;
}

auto remaining(std::chrono::steady_clock::time_point until,
               std::chrono::steady_clock::time_point now) -> std::chrono::milliseconds {
    if (until <= now) return std::chrono::milliseconds{0};
    return std::chrono::ceil<std::chrono::milliseconds>(until - now);
}

}  // namespace

check_op::check_op(op_context& ctx, check_plan plan, callback done)
    : operation{ctx}, plan_{std::move(plan)}, done_{std::move(done)} {}

auto check_op::now() noexcept -> std::chrono::steady_clock::time_point {
    return std::chrono::steady_clock::now();
}

void check_op::start() {
    const std::size_t n = ctx_.node_count();
    checks_.resize(n);
    member_answers_.assign(n, 0);
    master_answers_.resize(n);
    master_slots_.resize(n);
    masters_sent_.resize(n);
    sentinel_answers_.resize(n);
    start_ = now();
    slot_ = 0;
    for (std::size_t m = 0; m < n; ++m) {
        member_check& c = checks_[m];
        c.kind = m < plan_.kinds.size() ? plan_.kinds[m] : member_kind::standalone;
        c.member.node = ctx_.node(m).name().str();
        const auto& commands =
            c.kind == member_kind::cluster ? plan_.cluster_commands : plan_.master_commands;
        c.member.replies.resize(commands.size());
        ++targets_;
        const auto encoded = encode_all(commands);
        for (std::size_t k = 0; k < encoded.size(); ++k)
            send(m, encoded[k], make_tag(0, static_cast<std::uint32_t>(k), m));
        if (c.kind != member_kind::sentinel) continue;
        // Each sentinel, about this member's master name.
        const std::string& name = m < plan_.master_names.size() ? plan_.master_names[m] : "";
        std::vector<std::vector<std::string>> questions = plan_.sentinel_commands;
        for (auto& q : questions) std::replace(q.begin(), q.end(), std::string{"{name}"}, name);
        const auto asked = encode_all(questions);
        const node_port member = ctx_.node(m);
        c.sentinels.resize(member.sentinel_count());
        sentinel_answers_[m].assign(c.sentinels.size(), 0);
        for (std::size_t s = 0; s < c.sentinels.size(); ++s) {
            c.sentinels[s].node = member.sentinel_name(s);
            c.sentinels[s].replies.resize(asked.size());
            ++targets_;
            for (std::size_t k = 0; k < asked.size(); ++k) {
                member.send_to_sentinel(
                    s, asked[k].bytes(), &sentinel_sink_,
                    make_tag(static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(k), m));
            }
        }
    }
    if (targets_ == 0) {
        // No member: report on a later loop turn, never inside the caller.
        finished_ = true;
        after(std::chrono::milliseconds{0}, [this] { deliver(done_, std::move(checks_)); });
    }
}

auto check_op::record(node_probe& p, std::size_t& answers, std::size_t index,
                      std::chrono::steady_clock::time_point sent, const reply_event& event)
    -> bool {
    if (index >= p.replies.size()) return false;
    if (answers == 0)
        p.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(now() - sent);
    if (event.status == request_status::reply) {
        p.replies[index] = flatten(event.answer);
    } else if (p.cause.empty()) {
        p.cause = std::string{event.cause};
    }
    if (++answers < p.replies.size()) return false;
    p.answered = p.cause.empty();
    return true;
}

void check_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t m = tag_node(tag);
    const std::size_t target = tag_attempt(tag);
    const std::size_t index = tag_kind(tag);
    if (m >= checks_.size()) return;
    member_check& c = checks_[m];
    if (target == 0) {
        node_probe& p = c.member;
        if (!record(p, member_answers_[m], index, start_, event)) return;
        const node_port member = ctx_.node(m);
        p.topology = member.topology();
        if (p.answered) p.tls = member.tls(0);
        c.member_server = member.serving_name(0);
        if (c.kind != member_kind::cluster)
            c.quarantined = remaining(member.quarantined_until(0), now());
        if (c.kind == member_kind::cluster) ask_masters(m);
        target_done();
        return;
    }
    const std::size_t k = target - 1;
    if (k >= c.masters.size()) return;
    node_probe& p = c.masters[k];
    if (!record(p, master_answers_[m][k], index, masters_sent_[m], event)) return;
    if (p.answered) p.tls = ctx_.node(m).tls(master_slots_[m][k]);
    target_done();
}

void check_op::ask_masters(std::size_t m) {
    member_check& c = checks_[m];
    const node_port member = ctx_.node(m);
    const auto at = now();
    // The client's slot map, in runs of one server (and one quarantine state).
    for (std::size_t s = 0; s < all_slots; ++s) {
        const auto slot = static_cast<std::uint16_t>(s);
        std::string server = member.serving_name(slot);
        const auto quarantined = remaining(member.quarantined_until(slot), at);
        if (!c.map.empty() && c.map.back().server == server &&
            (c.map.back().quarantined.count() > 0) == (quarantined.count() > 0)) {
            c.map.back().last = slot;
            c.map.back().quarantined = std::max(c.map.back().quarantined, quarantined);
            continue;
        }
        c.map.push_back({slot, slot, std::move(server), quarantined});
    }
    if (std::all_of(c.map.begin(), c.map.end(), [](const slot_run& r) { return r.server.empty(); }))
        c.map.clear();  // no map: nothing to ask
    const auto encoded = encode_all(plan_.cluster_commands);
    masters_sent_[m] = now();
    for (const slot_run& run : c.map) {
        if (run.server.empty() || run.server == c.member_server) continue;
        const auto known = [&](const node_probe& p) { return p.node == run.server; };
        if (std::any_of(c.masters.begin(), c.masters.end(), known)) continue;
        node_probe& p = c.masters.emplace_back();
        p.node = run.server;
        p.replies.resize(encoded.size());
        master_answers_[m].push_back(0);
        master_slots_[m].push_back(run.first);
        ++targets_;
        slot_ = run.first;
        const auto target = static_cast<std::uint32_t>(c.masters.size());
        for (std::size_t k = 0; k < encoded.size(); ++k)
            send(m, encoded[k], make_tag(target, static_cast<std::uint32_t>(k), m));
    }
    slot_ = 0;
}

void check_op::sentinel_sink::on_reply(std::uint32_t tag, const reply_event& event) noexcept {
    op_.on_sentinel(tag, event);
}

void check_op::on_sentinel(std::uint32_t tag, const reply_event& event) {
    const std::size_t m = tag_node(tag);
    const std::size_t s = tag_attempt(tag);
    if (m < checks_.size() && s < checks_[m].sentinels.size()) {
        node_probe& p = checks_[m].sentinels[s];
        if (record(p, sentinel_answers_[m][s], tag_kind(tag), start_, event)) target_done();
    }
    // Not through operation::on_reply: this operation may be done with its last answer.
    maybe_retire();
}

void check_op::target_done() {
    if (--targets_ > 0 || finished_) return;
    finished_ = true;
    deliver(done_, std::move(checks_));
}

}  // namespace redlock::detail
