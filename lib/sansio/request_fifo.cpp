#include "sansio/request_fifo.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

namespace redlock::detail {

auto request_fifo::push_watched(reply_sink* sink, std::uint32_t tag, std::uint64_t deadline,
                                const request_watch& watch, std::string_view command)
    -> std::uint32_t {
    const auto number = front_number_ + static_cast<std::uint32_t>(queue_.size());
    watcher_ = watch.watcher;
    route_ = watch.route;
    keep(command);
    queue_.push_back(request{sink, tag, false, true, watch.slot, deadline});
    return number;
}

void request_fifo::keep(std::string_view command) {
    if (kept_head_ == kept_end_) kept_head_ = kept_end_ = 0;  // all answered: start over
    const auto length = static_cast<std::uint32_t>(command.size());
    const std::size_t need = sizeof length + command.size();
    if (kept_end_ + need > kept_capacity_) [[unlikely]]
        make_room(need);
    // Each command after its length, so that nothing else needs a queue of its own.
    std::memcpy(kept_.get() + kept_end_, &length, sizeof length);
    std::memcpy(kept_.get() + kept_end_ + sizeof length, command.data(), command.size());
    kept_end_ += need;
}

void request_fifo::make_room(std::size_t need) {
    const std::size_t live = kept_end_ - kept_head_;
    if (live + need <= kept_capacity_ / 2) {
        // Mostly answered bytes in front: move the rest down.
        std::memmove(kept_.get(), kept_.get() + kept_head_, live);
    } else {
        const std::size_t capacity = std::max<std::size_t>({kept_capacity_ * 2, live + need, 512});
        auto bigger = std::make_unique<char[]>(capacity);
        if (live > 0) std::memcpy(bigger.get(), kept_.get() + kept_head_, live);
        kept_ = std::move(bigger);
        kept_capacity_ = capacity;
    }
    kept_head_ = 0;
    kept_end_ = live;
}

void request_fifo::take_kept() {
    std::uint32_t length = 0;
    std::memcpy(&length, kept_.get() + kept_head_, sizeof length);
    popped_ = std::string_view{kept_.get() + kept_head_ + sizeof length, length};
    kept_head_ += sizeof length + length;
}

}  // namespace redlock::detail
