#include "transport/timer_queue.hpp"

#include "transport/callback_guard.hpp"

#include <exception>
#include <utility>

namespace redlock::detail {

timer_queue::timer_queue(uv_loop_t* loop) : loop_{loop} {
    if (timer_.open([loop](uv_timer_t* t) { return uv_timer_init(loop, t); }) != 0) {
        std::terminate();  // out of memory before the client could start
    }
}

auto timer_queue::schedule(std::chrono::milliseconds delay, std::function<void()> fn) -> key {
    const auto ms = delay.count() < 0 ? 0 : static_cast<std::uint64_t>(delay.count());
    const key k{uv_now(loop_) + ms, ++sequence_};
    entries_.emplace(k, std::move(fn));
    arm();
    return k;
}

auto timer_queue::cancel(const key& k) -> bool {
    return entries_.erase(k) > 0;
}

void timer_queue::arm() {
    if (closed_ || entries_.empty()) return;
    const std::uint64_t first = entries_.begin()->first.first;
    if (uv_is_active(timer_.base()) != 0 && armed_for_ <= first) return;
    armed_for_ = first;
    const std::uint64_t now = uv_now(loop_);
    uv_timer_start(timer_.get(), &timer_queue::on_timer, first > now ? first - now : 0, 0);
}

void timer_queue::on_timer(uv_timer_t* handle) {
    timer_queue& self = timer_handle::owner_of(handle);
    const std::uint64_t now = uv_now(self.loop_);
    // One entry at a time: a callback may schedule or cancel others.
    while (!self.entries_.empty() && self.entries_.begin()->first.first <= now) {
        auto node = self.entries_.extract(self.entries_.begin());
        call_guarded(node.mapped());
    }
    self.arm();
}

void timer_queue::close(std::function<void()> done) {
    entries_.clear();
    if (!on_closed_.add(std::move(done))) return;
    closed_ = true;
    timer_.close([](timer_queue& self) { self.on_closed_.closed(); });
}

}  // namespace redlock::detail
