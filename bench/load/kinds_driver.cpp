#include "load/kinds_driver.hpp"

#include "load/figures.hpp"
#include "load/lib_driver.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace redlock::bench {

namespace {

auto now_ns() -> std::int64_t {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
        .count();
}

void raise_to(std::atomic<int>& most, int value) noexcept {
    int seen = most.load(std::memory_order_relaxed);
    while (value > seen && !most.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
}

}  // namespace

auto kinds_driver::create(const client_config& config, const workload& load)
    -> std::unique_ptr<kinds_driver> {
    auto c = connected_client(config);
    if (!c) return nullptr;
    return std::unique_ptr<kinds_driver>{new kinds_driver{std::move(*c), load}};
}

kinds_driver::kinds_driver(client c, const workload& load) : client_{std::move(c)}, load_{load} {
    // One resource per shape: a node refuses a semaphore named with another K.
    resource_ = load_.resource_prefix +
                (load_.permits > 0 ? "sem" + std::to_string(load_.permits) : std::string{"rw"});
    for (int i = 0; i < load_.workers; ++i) ++roles_[static_cast<int>(role_of(i))].workers;
    if (load_.permits > 0) {
        permit_holders_.reset(new std::atomic<int>[static_cast<std::size_t>(load_.permits)]);
        for (int p = 0; p < load_.permits; ++p) permit_holders_[p].store(0);
    }
}

auto kinds_driver::role_of(int worker) const -> role {
    if (load_.permits > 0) return role::permit;
    return worker < load_.writers ? role::writer : role::reader;
}

void kinds_driver::start(phase_gate& gate, phase_stats& stats) {
    gate_ = &gate;
    stats_ = &stats;
    phase_start_ = steady::now();
    for (int i = 0; i < load_.workers; ++i) workers_.emplace_back([this, i] { worker(i); });
}

void kinds_driver::finish() {
    for (auto& w : workers_) w.join();
    workers_.clear();
    if (measuring_) {
        measured_s_ += std::chrono::duration<double>(steady::now() - phase_start_).count();
    }
}

void kinds_driver::enter(role r, std::optional<int> permit) {
    switch (r) {
        case role::writer:
            if (writers_in_.fetch_add(1) + 1 > 1 || readers_in_.load() > 0) ++violations_;
            break;
        case role::reader: {
            const int readers = readers_in_.fetch_add(1) + 1;
            if (readers == 1) batch_start_ns_.store(now_ns());
            raise_to(most_readers_, readers);
            if (writers_in_.load() > 0) ++violations_;
            break;
        }
        case role::permit: {
            const int held = permits_in_.fetch_add(1) + 1;
            raise_to(most_permits_, held);
            if (held > load_.permits) ++violations_;
            if (!permit || *permit < 0 || *permit >= load_.permits) {
                ++violations_;  // a lease without a permit in range
            } else if (permit_holders_[*permit].fetch_add(1) + 1 > 1) {
                ++violations_;
            }
            break;
        }
    }
}

void kinds_driver::leave(role r, std::optional<int> permit) {
    switch (r) {
        case role::writer:
            writers_in_.fetch_sub(1);
            break;
        case role::reader:
            if (readers_in_.fetch_sub(1) == 1 && measuring_) {
                batch_ns_.fetch_add(static_cast<std::uint64_t>(
                    std::max<std::int64_t>(0, now_ns() - batch_start_ns_.load())));
                batches_.fetch_add(1);
            }
            break;
        case role::permit:
            permits_in_.fetch_sub(1);
            if (permit && *permit >= 0 && *permit < load_.permits)
                permit_holders_[*permit].fetch_sub(1);
            break;
    }
}

void kinds_driver::worker(int index) {
    const role r = role_of(index);
    role_stats& mine = roles_[static_cast<int>(r)];
    lock_options options;
    options.ttl = load_.ttl;
    if (load_.max_wait.count() > 0) options.max_wait = load_.max_wait;
    if (load_.wait) options.wait = load_.wait;
    if (r == role::reader) options.shared = true;
    if (r == role::permit) options.permits = load_.permits;
    for (;;) {
        const auto asked = steady::now();
        if (!gate_->admit(asked)) break;
        auto held = client_.acquire(resource_, options);
        if (!held) {
            stats_->error("acquire:" + errc_name(held.error().code));
            if (measuring_) mine.gave_up.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        const auto granted = steady::now();
        const std::optional<int> permit = held->permit();
        enter(r, permit);
        hold_lock_for(load_.hold);
        // Out before the release is sent: whoever is granted next is granted
        // after the nodes deleted this hold, so after this.
        leave(r, permit);
        const auto releasing = steady::now();
        auto released = client_.release(held.value());
        const auto done = steady::now();
        if (!released) {
            stats_->error("release:" + errc_name(released.error().code));
            continue;
        }
        if (!released->majority()) stats_->note("release:deleted_on_fewer_than_a_majority");
        stats_->acquire.record(nanos_between(asked, granted));
        stats_->cycle.record(nanos_between(asked, done));
        stats_->completed.fetch_add(1, std::memory_order_relaxed);
        stats_->worker_locked(static_cast<std::size_t>(index));
        if (measuring_) {
            mine.wait.record(nanos_between(asked, granted));
            mine.grants.fetch_add(1, std::memory_order_relaxed);
            held_ns_.fetch_add(nanos_between(granted, done), std::memory_order_relaxed);
            working_ns_.fetch_add(nanos_between(granted, releasing), std::memory_order_relaxed);
            if (r == role::writer) writer_working_ns_.fetch_add(nanos_between(granted, releasing));
        }
    }
    gate_->slot_done();
}

void kinds_driver::add_json(nlohmann::ordered_json& out) const {
    using json = nlohmann::ordered_json;
    const double secs = std::max(measured_s_, 1e-9);
    json roles = json::object();
    static constexpr const char* names[role_count] = {"writer", "reader", "permit"};
    for (int i = 0; i < role_count; ++i) {
        const role_stats& s = roles_[i];
        if (s.workers == 0) continue;
        roles[names[i]] = json{
            {"workers", s.workers},
            {"grants", s.grants.load()},
            {"grants_per_s", static_cast<double>(s.grants.load()) / secs},
            {"gave_up", s.gave_up.load()},
            {"wait_ns", latency_json(s.wait)},
        };
    }
    json k{
        {"resource", resource_},
        {"measured_s", measured_s_},
        {"roles", roles},
        {"exclusion_violations", violations_.load()},
    };
    if (load_.permits > 0) {
        // The average number of permits held over the measured time, ÷ K.
        const double capacity = secs * 1e9 * load_.permits;
        k["permits"] = load_.permits;
        k["permit_utilisation"] = static_cast<double>(held_ns_.load()) / capacity;
        k["permit_utilisation_working"] = static_cast<double>(working_ns_.load()) / capacity;
        k["most_permits_held"] = most_permits_.load();
    } else {
        k["most_readers_together"] = most_readers_.load();
        // How the resource's time went: writers holding, some reader holding,
        // and neither (hand-offs: releases, wake-ups, acquisitions).
        const double total = secs * 1e9;
        const double batches = static_cast<double>(std::max<std::uint64_t>(batches_.load(), 1));
        k["reader_batches_per_s"] = static_cast<double>(batches_.load()) / secs;
        k["reader_batch_ms_mean"] = static_cast<double>(batch_ns_.load()) / batches / 1e6;
        k["writers_holding_share"] = static_cast<double>(writer_working_ns_.load()) / total;
        k["readers_holding_share"] = static_cast<double>(batch_ns_.load()) / total;
    }
    out["kinds"] = k;
    out["release_late"] = late_releases_json(client_);
}

}  // namespace redlock::bench
