#include "load/lib_driver.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace redlock::bench {

auto errc_name(const std::error_code& code) -> std::string {
    if (code.category() != redlock_category()) return code.message();
    return to_string(static_cast<errc>(code.value()));
}

auto late_releases_json(const client& c) -> nlohmann::ordered_json {
    const client_stats s = c.stats();
    return {{"deleted", s.release_late_deleted}, {"failed", s.release_late_failed}};
}

void lib_driver::add_json(nlohmann::ordered_json& out) const {
    out["release_late"] = late_releases_json(client_);
}

auto connected_client(const client_config& config) -> std::optional<client> {
    auto made = client::create(config);
    if (!made) {
        std::fprintf(stderr, "redlock_load: %s\n", made.error().message.c_str());
        return std::nullopt;
    }
    const auto give_up = steady::now() + std::chrono::seconds{5};
    while (made->stats().nodes_connected < made->node_count()) {
        if (steady::now() >= give_up) {
            std::fprintf(stderr, "redlock_load: lib: only %zu of %zu nodes connected after 5 s\n",
                         made->stats().nodes_connected, made->node_count());
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
    return std::move(*made);
}

auto lib_driver::create(const client_config& config, const workload& load)
    -> std::unique_ptr<lib_driver> {
    auto c = connected_client(config);
    if (!c) return nullptr;
    return std::unique_ptr<lib_driver>{new lib_driver{std::move(*c), load}};
}

lib_driver::lib_driver(client c, const workload& load) : client_{std::move(c)}, load_{load} {
    options_.ttl = load_.ttl;
    if (load_.kind == variant::fencing) options_.fencing = true;
    if (load_.contended && load_.max_wait.count() > 0) options_.max_wait = load_.max_wait;
    if (load_.shared) options_.shared = true;
    if (load_.wait) options_.wait = load_.wait;
    slots_.resize(static_cast<std::size_t>(load_.concurrency));
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        slots_[i].self = this;
        if (load_.one_resource) {
            slots_[i].resources = {load_.resource_prefix + "0"};
            continue;
        }
        // Named once here: a cycle costs the same whatever the number of resources.
        for (const std::size_t r : resources_of_chain(
                 i, slots_.size(), static_cast<std::size_t>(std::max(load_.resources, 0))))
            slots_[i].resources.push_back(load_.resource_prefix + std::to_string(r));
    }
}

void lib_driver::start(phase_gate& gate, phase_stats& stats) {
    gate_ = &gate;
    stats_ = &stats;
    if (load_.contended) {
        for (int i = 0; i < load_.workers; ++i) workers_.emplace_back([this, i] { worker(i); });
        return;
    }
    // From this thread the calls are posted to the loop; from then on every
    // cycle starts inside the previous one's callback, on the loop thread.
    for (auto& s : slots_) begin(s);
}

void lib_driver::finish() {
    for (auto& w : workers_) w.join();
    workers_.clear();
}

// ---- uncontended: chains of asynchronous cycles ---------------------------------------------

void lib_driver::begin(slot& s) {
    const auto now = steady::now();
    if (!gate_->admit(now)) {
        gate_->slot_done();
        return;
    }
    s.t0 = now;
    const std::string& resource = s.resources[s.turn];
    if (++s.turn == s.resources.size()) s.turn = 0;
    client_.acquire_async(resource, options_,
                          [&s](result<lock> r) { s.self->on_acquired(s, std::move(r)); });
}

void lib_driver::on_acquired(slot& s, result<lock> r) {
    if (!r) {
        note_acquire_failure(r.error());
        end_cycle(s, false);
        return;
    }
    stats_->acquire.record(nanos_between(s.t0, steady::now()));
    s.held = std::move(r).value();
    if (load_.kind != variant::extend) {
        release(s);
        return;
    }
    client_.extend_async(s.held, load_.ttl, [&s](result<std::chrono::milliseconds> e) {
        if (!e) s.self->stats_->note("extend:" + errc_name(e.error().code));
        s.self->release(s);
    });
}

void lib_driver::release(slot& s) {
    client_.release_async(s.held, [&s](result<release_report> r) {
        bool ok = true;
        if (!r) {
            s.self->stats_->error("release:" + errc_name(r.error().code));
            ok = false;
        } else {
            s.self->note_release(r.value());
        }
        s.held = lock{};
        s.self->end_cycle(s, ok);
    });
}

void lib_driver::note_acquire_failure(const error& e) {
    stats_->error("acquire:" + errc_name(e.code));
    // What the nodes did in the last attempt (refused: held by another owner).
    for (const auto& n : e.nodes) {
        if (n.status != node_status::ok && n.status != node_status::refused)
            stats_->note(std::string{"acquire_node:"} + to_string(n.status));
    }
}

void lib_driver::note_release(const release_report& report) {
    if (report.majority()) return;
    // Why the key stayed behind on some nodes: timeouts, refusals (expired
    // or taken over), errors.
    stats_->note("release:deleted_on_fewer_than_a_majority");
    for (const auto& n : report.nodes) {
        if (n.status != node_status::ok)
            stats_->note(std::string{"release_node:"} + to_string(n.status));
    }
}

void lib_driver::end_cycle(slot& s, bool ok) {
    if (ok) {
        stats_->cycle.record(nanos_between(s.t0, steady::now()));
        stats_->completed.fetch_add(1, std::memory_order_relaxed);
    }
    begin(s);
}

// ---- contended: blocking workers on one resource --------------------------------------------

void lib_driver::worker(int index) {
    const std::string resource = load_.resource_prefix + "contended";
    for (;;) {
        const auto t0 = steady::now();
        if (!gate_->admit(t0)) break;
        auto held = client_.acquire(resource, options_);
        if (!held) {
            note_acquire_failure(held.error());
            continue;
        }
        const auto granted = steady::now();
        stats_->acquire.record(nanos_between(t0, granted));
        hold_lock_for(load_.hold);
        const auto releasing = steady::now();
        auto released = client_.release(held.value());
        stats_->hold(granted, releasing);  // the next holder's hand-off starts at `releasing`
        if (!released) {
            stats_->error("release:" + errc_name(released.error().code));
            continue;
        }
        note_release(released.value());
        stats_->cycle.record(nanos_between(t0, steady::now()));
        stats_->completed.fetch_add(1, std::memory_order_relaxed);
        stats_->worker_locked(static_cast<std::size_t>(index));
    }
    gate_->slot_done();
}

}  // namespace redlock::bench
