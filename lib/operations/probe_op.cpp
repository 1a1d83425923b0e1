#include "operations/probe_op.hpp"

#include "operations/op_context.hpp"
#include "sansio/command.hpp"
#include "sansio/reply.hpp"

#include <string_view>
#include <utility>

namespace redlock::detail {

auto flatten(const reply* r) -> flat_reply {
    flat_reply out;
    if (r == nullptr) return out;
    switch (r->kind) {
        case reply_kind::integer:
            out.type = flat_reply::kind::integer;
            out.integer = r->integer;
            break;
        case reply_kind::string:
        case reply_kind::status:
            out.type = flat_reply::kind::text;
            out.text = std::string{reply_text(r)};
            break;
        case reply_kind::error:
            out.type = flat_reply::kind::error;
            out.text = std::string{reply_text(r)};
            break;
        case reply_kind::array:
            out.type = flat_reply::kind::array;
            for (const reply* e : r->elements) out.elements.push_back(flatten(e));
            break;
        case reply_kind::nil:
            break;
    }
    return out;
}

probe_op::probe_op(op_context& ctx, std::vector<std::vector<std::string>> commands, callback done,
                   std::uint16_t slot)
    : operation{ctx}, commands_{std::move(commands)}, done_{std::move(done)} {
    slot_ = slot;
}

// The one place this shell reads the clock.
auto probe_op::now() noexcept -> std::chrono::steady_clock::time_point {
    return std::chrono::steady_clock::now();
}

void probe_op::start() {
    const std::size_t n = ctx_.node_count();
    probes_.resize(n);
    answers_.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        probes_[i].node = ctx_.node(i).name().str();
        probes_[i].replies.resize(commands_.size());
    }
    start_ = now();
    if (commands_.empty()) {
        // Nothing to ask: report on a later loop turn, never inside the caller.
        finished_ = true;
        after(std::chrono::milliseconds{0}, [this] { deliver(done_, std::move(probes_)); });
        return;
    }
    // Each command encoded once, for every node.
    std::vector<encoded_command> encoded;
    encoded.reserve(commands_.size());
    for (const auto& command : commands_) {
        const std::vector<std::string_view> argv{command.begin(), command.end()};
        encoded.emplace_back(argv);
    }
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t c = 0; c < encoded.size(); ++c)
            send(i, encoded[c], make_tag(0, static_cast<std::uint32_t>(c), i));
    }
}

void probe_op::handle(std::uint32_t tag, const reply_event& event) {
    const std::size_t node = tag_node(tag);
    const std::size_t index = tag_kind(tag);
    node_probe& p = probes_[node];
    if (answers_[node] == 0) {
        p.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(now() - start_);
    }
    if (event.status == request_status::reply) {
        p.replies[index] = flatten(event.answer);
    } else if (p.cause.empty()) {
        // A cluster or Sentinel member: the node that failed, not only the member's name
        // (its first seed, or its master name), which is not where the request went.
        const std::string where = ctx_.node(node).serving_name(slot_);
        p.cause = where.empty() || event.cause.starts_with(where + ": ")
                      ? std::string{event.cause}
                      : where + ": " + std::string{event.cause};
    }
    if (++answers_[node] < commands_.size()) return;
    p.answered = p.cause.empty();
    p.topology = ctx_.node(node).topology();
    // Read as the node's last answer is handled: the session that carried it is still up.
    if (p.answered) p.tls = ctx_.node(node).tls(slot_);
    if (++complete_ < probes_.size()) return;
    finished_ = true;
    deliver(done_, std::move(probes_));
}

}  // namespace redlock::detail
