#pragma once

#include "sansio/reply.hpp"

#include <cstdint>
#include <deque>
#include <string_view>

namespace redlock::detail {

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
        bool expired;
        std::uint64_t deadline;  ///< loop milliseconds
    };

    /// Queues a request at the back; returns its number.
    auto push(reply_sink* sink, std::uint32_t tag, std::uint64_t deadline) -> std::uint32_t {
        const auto number = front_number_ + static_cast<std::uint32_t>(queue_.size());
        queue_.push_back(request{sink, tag, false, deadline});
        return number;
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
        return r;
    }
    /// Disown: `sink` gives up request `number`'s reply, which is then read and dropped.
    /// True if that request was still waiting and still `sink`'s.
    auto disown(std::uint32_t number, const reply_sink* sink) noexcept -> bool {
        const std::uint32_t index = number - front_number_;
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
    std::deque<request> queue_;
    std::uint32_t front_number_ = 0;
    std::uint64_t generation_ = 0;
};

}  // namespace redlock::detail
