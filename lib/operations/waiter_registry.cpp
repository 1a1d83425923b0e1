#include "operations/waiter_registry.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iterator>
#include <utility>

namespace redlock::detail {

waiter_registry::waiter_registry(uv_loop_t* loop, write_batcher& batcher,
                                 const client_config& config, random_source& rng,
                                 timer_queue& timers)
    : loop_{loop}, batcher_{batcher}, config_{config}, rng_{rng}, timers_{timers} {}

void waiter_registry::add(const std::string& id, waiter* w, const std::string& lock_key,
                          std::uint64_t arrival, std::uint64_t ticket) {
    if (closed_) return;
    add(id, w);
    entry& e = waiters_[id];
    e.lock_key = lock_key;
    e.order = {arrival, ticket};
    successors_[lock_key][e.order] = w;
}

auto waiter_registry::first_successor(std::string_view lock_key) const -> waiter* {
    const auto it = successors_.find(std::string{lock_key});
    if (it == successors_.end() || it->second.empty()) return nullptr;
    return it->second.begin()->second;
}

void waiter_registry::add(const std::string& id, waiter* w) {
    if (closed_) return;
    waiters_[id].w = w;
    waiter_gauge_.store(waiters_.size(), std::memory_order_relaxed);
    if (idle_timer_) {
        timers_.cancel(*idle_timer_);
        idle_timer_.reset();
    }
    if (connections_.empty()) open_connections();
}

void waiter_registry::watch_shard(const std::string& id, std::string channel, std::uint16_t slot) {
    if (closed_ || channel.empty()) return;
    const auto it = waiters_.find(id);
    if (it == waiters_.end() || !it->second.shard.channel.empty()) return;
    it->second.shard = entry_shard{std::move(channel), slot};
    if (++shard_watchers_[it->second.shard.channel] == 1 && shard_watcher_)
        shard_watcher_(it->second.shard.channel, slot, true);
}

void waiter_registry::unwatch_shard(entry_shard& shard) {
    if (shard.channel.empty()) return;
    const auto it = shard_watchers_.find(shard.channel);
    if (it != shard_watchers_.end() && --it->second == 0) {
        shard_watchers_.erase(it);
        if (shard_watcher_) shard_watcher_(shard.channel, shard.slot, false);
    }
    shard.channel.clear();
}

void waiter_registry::remove(const std::string& id) {
    if (closed_) return;
    const auto it = waiters_.find(id);
    if (it == waiters_.end()) return;
    unwatch_shard(it->second.shard);
    if (!it->second.lock_key.empty()) {
        const auto list = successors_.find(it->second.lock_key);
        if (list != successors_.end()) {
            list->second.erase(it->second.order);
            if (list->second.empty()) successors_.erase(list);
        }
    }
    waiters_.erase(it);
    waiter_gauge_.store(waiters_.size(), std::memory_order_relaxed);
    close_when_idle();
}

void waiter_registry::open() {
    if (closed_ || !connections_.empty()) return;
    open_connections();
    close_when_idle();  // if nobody comes to wait
}

void waiter_registry::close_when_idle() {
    if (!waiters_.empty() || connections_.empty() || idle_timer_) return;
    idle_timer_ = timers_.schedule(std::chrono::seconds{2}, [this] {
        idle_timer_.reset();
        if (waiters_.empty()) close_connections();
    });
}

auto waiter_registry::subscribed() const noexcept -> bool {
    // Standalone nodes: this registry's connections, opened while anyone waits.
    if (connections_.empty() && !config_.nodes.empty()) return false;
    for (const auto& c : connections_) {
        if (!c->subscribed()) return false;
    }
    return !routed_hearing_ || routed_hearing_();
}

void waiter_registry::open_connections() {
    for (std::size_t i = 0; i < config_.nodes.size(); ++i) {
        // The standalone nodes come first among the quorum's members: i is the member's index.
        auto c = std::make_unique<node_connection>(loop_, batcher_, config_.nodes[i], config_, rng_,
                                                   counters_, tls_);
        c->subscribe(channel_, [this, i](std::string_view message) { on_message(message, i); });
        c->start();
        connections_.push_back(std::move(c));
    }
    connection_gauge_.store(connections_.size(), std::memory_order_relaxed);
}

void waiter_registry::close_connections() {
    for (auto& c : connections_) {
        node_connection* raw = c.get();
        closing_.push_back(std::move(c));
        auto it = std::prev(closing_.end());
        raw->close([this, it] {
            // Freed after the handle callbacks have returned, on a later turn.
            timers_.schedule(std::chrono::milliseconds{0}, [this, it] { closing_.erase(it); });
        });
    }
    connections_.clear();
    connection_gauge_.store(0, std::memory_order_relaxed);
}

auto waiter_registry::close(const std::function<void()>& on_closed) -> std::size_t {
    closed_ = true;
    waiters_.clear();
    shard_watchers_.clear();
    successors_.clear();
    waiter_gauge_.store(0, std::memory_order_relaxed);
    const std::size_t n = connections_.size() + closing_.size();
    for (auto& c : connections_) c->close(on_closed);
    for (auto& c : closing_) c->close(on_closed);
    return n;
}

void waiter_registry::on_message(std::string_view message, std::optional<std::size_t> node) {
    // "<waiter>|<released value>": which release it was does not matter, only
    // that one ran. "<waiter>+<attempt>": a waiter id holds neither '|' nor '+'.
    const std::size_t end = std::min(message.find('|'), message.find('+'));
    const auto it = waiters_.find(std::string{message.substr(0, end)});
    if (it == waiters_.end()) return;  // finished meanwhile, or another client's stale entry
    std::uint32_t attempt = 0;
    if (end < message.size() && message[end] == '+' && node) {
        const std::string_view digits = message.substr(end + 1);
        const auto [ptr, ec] =
            std::from_chars(digits.data(), digits.data() + digits.size(), attempt);
        if (ec == std::errc{} && ptr == digits.data() + digits.size()) {
            it->second.w->on_handed(*node, attempt);
            return;
        }
    }
    it->second.w->wake();
}

}  // namespace redlock::detail
