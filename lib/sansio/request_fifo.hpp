#pragma once

#include "sansio/reply.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

namespace redlock::detail {

/// A request a routed member (a Redis Cluster, a Sentinel-managed master) sent straight on one
/// of its connections with its operation's sink, as its watcher hears of it: which sink and tag
/// it answers, its key's slot, the connection's id for it (route_ids) and its number there, and
/// its encoded command, kept for a resend (empty when the outcome is no reply at all).
struct watched_request {
    reply_sink* sink;
    std::uint32_t tag;
    std::uint16_t slot;
    std::uint8_t route;
    std::uint32_t number;
    std::string_view command;
};

/// Hears first what a watched request ended with when it is not a plain answer: an error reply
/// (MOVED, ASK, CLUSTERDOWN…), a timeout, no connection. It then owes the sink its one
/// on_reply, as the connection would have. A plain answer goes to the sink directly, so that
/// the usual reply costs a routed member nothing.
class reply_watcher {
public:
    virtual void on_unusual(const watched_request& request, const reply_event& event) noexcept = 0;

protected:
    reply_watcher() = default;
    reply_watcher(const reply_watcher&) = default;
    auto operator=(const reply_watcher&) -> reply_watcher& = default;
    virtual ~reply_watcher() = default;
};

/// Who watches a request, and what it needs to know: none for a standalone master's.
struct request_watch {
    reply_watcher* watcher = nullptr;
    std::uint16_t slot = 0;
    std::uint8_t route = 0;
};

/// The requests of one connection waiting for their replies, in the order they
/// were sent (Redis answers in order). Pure bookkeeping, no I/O.
///
/// A request that misses its deadline is reported once as a timeout but keeps
/// its slot, so its late reply is read and discarded instead of being taken
/// for the next request's answer. Requests are numbered as they are queued, so
/// that a number finds its request in constant time (disown()).
class request_fifo {
public:
    struct request {
        reply_sink* sink;
        std::uint32_t tag;
        bool expired = false;
        /// A routed member's request: its command is kept for a resend, and its unusual
        /// outcomes go to the watcher (watch_of()).
        bool watched = false;
        std::uint16_t slot = 0;      ///< a watched request's slot
        std::uint64_t deadline = 0;  ///< loop milliseconds
    };

    /// Queues a request at the back; returns its number.
    auto push(reply_sink* sink, std::uint32_t tag, std::uint64_t deadline) -> std::uint32_t {
        const auto number = front_number_ + static_cast<std::uint32_t>(queue_.size());
        queue_.push_back(request{sink, tag, false, false, 0, deadline});
        return number;
    }
    /// Queues a routed member's request (`watch`, one watcher per connection), keeping
    /// `command` until its answer has been handed on (popped_command()).
    auto push_watched(reply_sink* sink, std::uint32_t tag, std::uint64_t deadline,
                      const request_watch& watch, std::string_view command) -> std::uint32_t;
    /// Who hears `r`'s unusual outcomes: none unless it was pushed watched.
    [[nodiscard]] auto watch_of(const request& r) const noexcept -> request_watch {
        return r.watched ? request_watch{watcher_, r.slot, route_} : request_watch{};
    }
    /// Queues `requests` before everything else (a handshake); the requests
    /// already queued keep their numbers.
    void push_front(const std::deque<request>& requests) {
        queue_.insert(queue_.begin(), requests.begin(), requests.end());
        front_number_ -= static_cast<std::uint32_t>(requests.size());
    }
    /// The oldest request, which the next reply answers. Not empty().
    auto pop_front() -> request {
        const request r = queue_.front();
        queue_.pop_front();
        ++front_number_;
        if (r.watched) [[unlikely]]
            take_kept();
        return r;
    }
    /// The command of the watched request pop_front() returned last: valid until the next
    /// push() or take_all().
    [[nodiscard]] auto popped_command() const noexcept -> std::string_view { return popped_; }
    /// Disown: `sink` gives up request `number`'s reply, which is then read and dropped.
    /// True if that request was still waiting and still `sink`'s.
    /// Only the bits of `mask` of the number are compared (a routed member keeps 24 of them).
    auto disown(std::uint32_t number, const reply_sink* sink,
                std::uint32_t mask = UINT32_MAX) noexcept -> bool {
        const std::uint32_t index = (number - front_number_) & mask;
        if (sink == nullptr || index >= queue_.size()) return false;
        request& r = queue_[index];
        if (r.sink != sink || r.expired) return false;
        r.sink = nullptr;
        return true;
    }
    /// Every request, taken out (the connection failed or closes).
    auto take_all() -> std::deque<request> {
        std::deque<request> all;
        all.swap(queue_);
        front_number_ += static_cast<std::uint32_t>(all.size());
        kept_head_ = kept_end_ = 0;
        popped_ = {};
        ++generation_;
        return all;
    }
    /// How many times take_all() emptied the queue: a loop over requests whose
    /// callbacks may fail the connection stops when it changes.
    [[nodiscard]] auto generation() const noexcept -> std::uint64_t { return generation_; }

    [[nodiscard]] auto empty() const noexcept -> bool { return queue_.empty(); }
    [[nodiscard]] auto size() const noexcept -> std::size_t { return queue_.size(); }
    [[nodiscard]] auto operator[](std::size_t i) noexcept -> request& { return queue_[i]; }
    [[nodiscard]] auto operator[](std::size_t i) const noexcept -> const request& {
        return queue_[i];
    }
    [[nodiscard]] auto front() const noexcept -> const request& { return queue_.front(); }
    /// The number of the oldest request (the next to be answered).
    [[nodiscard]] auto front_number() const noexcept -> std::uint32_t { return front_number_; }

private:
    /// Appends a watched request's command to the kept bytes, which are a FIFO too: the
    /// answered ones' bytes are dropped when all are answered, or when they are most of it.
    void keep(std::string_view command);
    /// The oldest kept command, as popped_command(). Out of line, as keep(): a standalone
    /// master's requests never come here, and its path stays as short as it was.
    void take_kept();
    /// Room for `need` more kept bytes: the live ones moved down, or a bigger buffer.
    void make_room(std::size_t need);

    std::deque<request> queue_;
    // The watched requests' commands, in their order, each after its length: bytes
    // [kept_head_, kept_end_) of kept_, which has room for kept_capacity_.
    std::unique_ptr<char[]> kept_;
    std::size_t kept_capacity_ = 0;
    std::size_t kept_head_ = 0;
    std::size_t kept_end_ = 0;
    std::string_view popped_;
    reply_watcher* watcher_ = nullptr;
    std::uint8_t route_ = 0;
    std::uint32_t front_number_ = 0;
    std::uint64_t generation_ = 0;
};

/// Hands an outcome on: to `watch`'s watcher when there is one and the outcome is not a plain
/// answer, else to `sink`; to no one when the request was disowned (null sink). `number` is
/// the request's, `command` its kept bytes (empty but for a reply just popped).
inline void hand_on(reply_sink* sink, std::uint32_t tag, const request_watch& watch,
                    std::uint32_t number, std::string_view command,
                    const reply_event& event) noexcept {
    if (sink == nullptr) return;
    if (watch.watcher != nullptr &&
        (event.status != request_status::reply || is_error(event.answer))) [[unlikely]] {
        watch.watcher->on_unusual(
            watched_request{sink, tag, watch.slot, watch.route, number, command}, event);
        return;
    }
    sink->on_reply(tag, event);
}

}  // namespace redlock::detail
