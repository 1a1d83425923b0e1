// A client's waiters and the subscriber connections that wake them: opened while
// anyone waits (and a grace period after), one per node.
#include "detail/acquire_op.hpp"
#include "detail/client_core.hpp"

#include <chrono>
#include <iterator>
#include <string>
#include <utility>

namespace redlock::detail {

void client_core::add_waiter(const std::string& id, operation* op) {
    waiters_[id] = op;
    waiter_gauge_.store(waiters_.size(), std::memory_order_relaxed);
    if (idle_timer_) {
        timers_.cancel(*idle_timer_);
        idle_timer_.reset();
    }
    if (subscribers_.empty() && !stopping_) open_subscribers();
}

void client_core::remove_waiter(const std::string& id) {
    const bool erased = waiters_.erase(id) > 0;
    waiter_gauge_.store(waiters_.size(), std::memory_order_relaxed);
    if (!erased || !waiters_.empty() || subscribers_.empty() || idle_timer_) return;
    // Dropped when nobody waits, after a grace period so that a steady stream
    // of waiters does not open and close connections all the time.
    idle_timer_ = timers_.schedule(std::chrono::seconds{2}, [this] {
        idle_timer_.reset();
        if (waiters_.empty()) close_subscribers();
    });
}

void client_core::open_subscribers() {
    const std::string channel = wake_prefix_ + client_id_;
    for (const auto& address : config_.nodes) {
        auto s = std::make_unique<node_connection>(loop_.loop(), hooks_, address, config_, rng_,
                                                   subscriber_counters_);
        s->subscribe(channel, [this](std::string_view waiter) { on_wake(waiter); });
        s->start();
        subscribers_.push_back(std::move(s));
    }
    subscriber_gauge_.store(subscribers_.size(), std::memory_order_relaxed);
}

void client_core::close_subscribers() {
    for (auto& s : subscribers_) {
        node_connection* raw = s.get();
        closing_subscribers_.push_back(std::move(s));
        auto it = std::prev(closing_subscribers_.end());
        raw->close([this, it] {
            // Freed after the handle callbacks have returned, on a later turn.
            timers_.schedule(std::chrono::milliseconds{0},
                             [this, it] { closing_subscribers_.erase(it); });
        });
    }
    subscribers_.clear();
    subscriber_gauge_.store(0, std::memory_order_relaxed);
}

void client_core::on_wake(std::string_view message) {
    // "<waiter>|<released value>": which release it was does not matter, only
    // that one ran.
    const std::string_view waiter = message.substr(0, message.find('|'));
    const auto it = waiters_.find(std::string{waiter});
    if (it == waiters_.end()) return;  // finished meanwhile, or another client's stale entry
    static_cast<acquire_op*>(it->second)->wake();
}

}  // namespace redlock::detail
