#include "transport/reply_router.hpp"

#include "sansio/reply.hpp"

#include <utility>

namespace redlock::detail {
namespace {

/// A pub/sub push: ["message", channel, payload], or ["smessage", ...] on a shard channel.
auto pushed_message(const reply* r) -> const reply* {
    if (!is_array(r, 3)) return nullptr;
    const std::string_view kind = reply_text(r->elements[0]);
    if (kind != "message" && kind != "smessage") return nullptr;
    return r->elements[2];
}

}  // namespace

void reply_router::subscribe(std::string channel,
                             std::function<void(std::string_view)> on_message) {
    channel_ = std::move(channel);
    on_message_ = std::move(on_message);
}

auto reply_router::feed(const char* data, std::size_t len) -> bool {
    if (!reader_.feed(data, len)) return protocol_error(reader_.error());
    // No reply of ours comes anywhere near this; a node that sends more in one
    // reply is broken or hostile, and must not make us buffer without bound
    // (hiredis 0.14's reader has no limit of its own).
    if (reader_.unparsed() > reply_reader::max_bytes) {
        return protocol_error("a reply larger than 16 MiB");
    }
    // The references loaded once, not once per reply.
    request_fifo& pending = pending_;
    node_counters& metrics = metrics_;
    const std::uint64_t generation = pending.generation();
    while (generation == pending.generation()) {
        reply_ptr answer;
        if (!reader_.next(answer)) return protocol_error(reader_.error());
        if (answer == nullptr) return true;  // need more bytes
        if (!channel_.empty()) {
            if (const reply* payload = pushed_message(answer.get())) {
                // Pushed, not a reply: it takes no slot in the FIFO.
                const std::string text{reply_text(payload)};
                answer.reset();
                if (on_message_) on_message_(text);
                continue;
            }
        }
        if (pending.empty()) return protocol_error("a reply nobody asked for");
        if (is_error(answer.get()) && !is_noscript(answer.get()))
            metrics.error_replies.fetch_add(1, std::memory_order_relaxed);
        const std::uint32_t number = pending.front_number();
        const request_fifo::request req = pending.pop_front();
        metrics.on_answered(number, !req.expired);
        if (!req.expired && req.sink != nullptr) {
            const reply_event event{request_status::reply, answer.get(), {}};
            if (!req.watched) [[likely]] {
                req.sink->on_reply(req.tag, event);
            } else {
                hand_on(req.sink, req.tag, pending.watch_of(req), number, pending.popped_command(),
                        event);
            }
        }
    }
    return true;
}

auto reply_router::protocol_error(std::string_view what) -> bool {
    failure_ = "protocol error: ";
    failure_ += what;
    return false;
}

}  // namespace redlock::detail
