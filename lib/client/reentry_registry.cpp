#include "client/reentry_registry.hpp"

#include "operations/lock_state.hpp"

#include <chrono>

namespace redlock::detail {

auto reentry_registry::key_of(const std::vector<std::string>& resources,
                              const lock_options& options) -> std::string {
    // Each part carries its length: no owner or resource name (a NUL in it
    // included) can make one key look like another.
    std::string key;
    key += options.permits ? 'p' : options.shared.value_or(false) ? 's' : 'x';
    key += std::to_string(options.permits.value_or(0));
    auto part = [&key](const std::string& text) {
        key += ';';
        key += std::to_string(text.size());
        key += ':';
        key += text;
    };
    part(options.owner.value_or(""));
    for (const auto& r : resources) part(r);
    return key;
}

auto reentry_registry::add_hold(lock_state& state) noexcept -> bool {
    // Never from 0: a release that took the last hold is already on its way to
    // the nodes, and must not hand its lock to a new holder.
    int holds = state.holds.load(std::memory_order_acquire);
    while (holds > 0) {
        if (state.holds.compare_exchange_weak(holds, holds + 1, std::memory_order_acq_rel))
            return true;
    }
    return false;
}

auto reentry_registry::reenter(const std::string& key) -> std::shared_ptr<lock_state> {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    std::shared_ptr<lock_state> held = it->second.held.lock();
    if (!held || !lock_state::handle(held).valid() || !add_hold(*held)) return nullptr;
    return held;
}

auto reentry_registry::route_owned(acquisition_request& request) -> reentry_route {
    std::string key = key_of(request.resources, request.options);
    if (auto held = reenter(key)) return {.held = std::move(held)};
    if (in_flight(key)) {
        // The owner's first acquisition decides: held, this one re-enters it;
        // failed, this one tries on its own.
        const auto ticket = request.ticket;
        wait(key, ticket, [this, waiting = std::move(request)](bool cancelled) mutable {
            if (resume_) resume_(std::move(waiting), cancelled);
        });
        return {.held = nullptr, .waits = true};
    }
    begin(key);
    request.done = [this, key = std::move(key),
                    done = std::move(request.done)](result<lock> outcome) mutable {
        end(key, outcome ? lock_state::of(*outcome) : nullptr);
        done(std::move(outcome));
    };
    return {};
}

auto reentry_registry::in_flight(const std::string& key) const -> bool {
    const auto it = entries_.find(key);
    return it != entries_.end() && it->second.in_flight;
}

void reentry_registry::wait(const std::string& key, std::uint64_t ticket,
                            std::function<void(bool)> retry) {
    entries_[key].waiting.push_back({ticket, std::move(retry)});
}

auto reentry_registry::cancel(std::uint64_t ticket) -> bool {
    for (auto& [key, e] : entries_) {
        for (auto it = e.waiting.begin(); it != e.waiting.end(); ++it) {
            if (it->ticket != ticket) continue;
            auto retry = std::move(it->retry);
            e.waiting.erase(it);
            retry(true);
            return true;
        }
    }
    return false;
}

void reentry_registry::begin(const std::string& key) {
    if (entries_.size() >= swept_at_) sweep();
    entry& e = entries_[key];
    e.in_flight = true;
    e.held.reset();
}

void reentry_registry::end(const std::string& key, std::shared_ptr<lock_state> held) {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return;
    it->second.in_flight = false;
    it->second.held = held;
    std::vector<waiter> waiting = std::move(it->second.waiting);
    it->second.waiting.clear();
    if (!held) entries_.erase(it);
    for (auto& w : waiting) w.retry(false);  // each retry may touch entries_ again
}

void reentry_registry::sweep() {
    // Entries whose lock is gone (released to zero, or its last handle dropped).
    for (auto it = entries_.begin(); it != entries_.end();) {
        const auto held = it->second.held.lock();
        const bool live = it->second.in_flight || !it->second.waiting.empty() ||
                          (held && held->holds.load(std::memory_order_acquire) > 0 &&
                           !held->released.load(std::memory_order_acquire));
        it = live ? std::next(it) : entries_.erase(it);
    }
    swept_at_ = std::max<std::size_t>(64, entries_.size() * 2);
}

}  // namespace redlock::detail
