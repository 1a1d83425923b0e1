#include "injector.hpp"

#include "record.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace redlock_torture {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

fault_injector::fault_injector(std::vector<redlock_test::redis_server>& nodes,
                               std::vector<redlock_test::fault_proxy>& proxies,
                               injector_settings settings, std::uint64_t seed, std::FILE* log)
    : nodes_{nodes},
      proxies_{proxies},
      settings_{std::move(settings)},
      rng_{seed},
      log_{log},
      state_(nodes.size()),
      next_fault_{clock::now() + settings_.first_fault} {
    if (proxies_.size() != nodes_.size() || settings_.persistent.size() != nodes_.size())
        throw std::invalid_argument("fault_injector: one proxy and one persistence flag per node");
    if (settings_.latencies.empty())
        throw std::invalid_argument("fault_injector: no latencies to choose from");
    for (const char* kind : {"kill", "freeze", "blackhole", "latency", "drop", "reset", "skipped"})
        counts_[kind] = 0;
}

auto fault_injector::uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t {
    return std::uniform_int_distribution<std::int64_t>{lo, hi}(rng_);
}

void fault_injector::note(const char* what, std::size_t node, const std::string& detail) {
    if (log_ == nullptr) return;
    std::fprintf(
        log_, "%lld %s node=%zu port=%u proxy=%u%s%s\n", static_cast<long long>(monotonic_ns()),
        what, node, static_cast<unsigned>(nodes_[node].port()),
        static_cast<unsigned>(proxies_[node].port()), detail.empty() ? "" : " ", detail.c_str());
    std::fflush(log_);
}

void fault_injector::skip(const char* what, std::size_t node) {
    ++counts_["skipped"];
    note("skip", node, what);
}

auto fault_injector::impaired(std::size_t i) const -> bool {
    const node_state& s = state_[i];
    return s.restart_at || s.thaw_at || s.heal_at ||
           (s.latency_until && s.latency >= settings_.impairing_latency);
}

auto fault_injector::impaired_count() const -> std::size_t {
    std::size_t n = 0;
    for (std::size_t i = 0; i < state_.size(); ++i) n += impaired(i) ? 1 : 0;
    return n;
}

auto fault_injector::restart_delayed(std::size_t i) const -> bool {
    return !settings_.persistent[i] && settings_.delay_in_memory_restarts;
}

auto fault_injector::restart(std::size_t i) -> bool {
    try {
        nodes_[i].restart();
        state_[i].restart_at.reset();
        note("restart", i);
        return true;
    } catch (const std::exception& e) {
        // Its port was taken meanwhile (an ephemeral port of some connection): try again.
        state_[i].restart_at = clock::now() + 100ms;
        ++restart_failures_;
        note("restart-failed", i, e.what());
        return false;
    }
}

void fault_injector::end_due(clock::time_point now) {
    for (std::size_t i = 0; i < state_.size(); ++i) {
        node_state& s = state_[i];
        if (s.restart_at && *s.restart_at <= now) restart(i);
        if (s.thaw_at && *s.thaw_at <= now) {
            nodes_[i].thaw();
            s.thaw_at.reset();
            note("thaw", i);
        }
        if (s.heal_at && *s.heal_at <= now) {
            proxies_[i].heal();
            if (s.latency_until) proxies_[i].set_latency(s.latency);  // heal() cleared it
            s.heal_at.reset();
            note("unblackhole", i);
        }
        if (s.latency_until && *s.latency_until <= now) {
            proxies_[i].set_latency(0ms);
            s.latency_until.reset();
            s.latency = 0ms;
            note("latency-end", i);
        }
    }
}

void fault_injector::step() {
    const auto now = clock::now();
    end_due(now);
    if (now >= next_fault_) inject(now);
    max_impaired_ = std::max(max_impaired_, impaired_count());
}

void fault_injector::inject(clock::time_point now) {
    // A fixed number of draws per fault, whatever happens to it: the schedule of
    // attempted faults depends on the seed alone.
    const auto roll = uniform(0, 99);
    const auto node = static_cast<std::size_t>(uniform(0, std::ssize(nodes_) - 1));
    const auto a = uniform(0, 1'000'000);
    const auto b = settings_.one_draw_per_fault ? a / 1000 : uniform(0, 1'000'000);
    next_fault_ = now + milliseconds{uniform(50, settings_.max_gap.count())};

    const std::size_t limit = settings_.max_impaired.value_or((nodes_.size() - 1) / 2);
    node_state& s = state_[node];
    const bool room = impaired_count() < limit;
    const fault_mix& mix = settings_.mix;

    if (roll < mix.kill) {  // kill -9, restart later
        if (impaired(node) || !room) return skip("kill", node);
        nodes_[node].crash();
        const bool delayed = restart_delayed(node);
        const milliseconds down =
            delayed ? settings_.max_ttl + settings_.restart_margin + milliseconds{a % 1000}
                    : milliseconds{a % 1500};
        s.restart_at = now + down;
        ++counts_["kill"];
        note("kill", node,
             "down_ms=" + std::to_string(down.count()) +
                 (settings_.persistent[node] ? " aof=always"
                  : delayed                  ? " in-memory"
                                             : " in-memory undelayed"));
    } else if (roll < mix.kill + mix.freeze) {  // SIGSTOP for 100..800 ms
        if (impaired(node) || !room) return skip("freeze", node);
        nodes_[node].freeze();
        const milliseconds pause{100 + a % 701};
        s.thaw_at = now + pause;
        ++counts_["freeze"];
        note("freeze", node, "pause_ms=" + std::to_string(pause.count()));
    } else if (roll < mix.kill + mix.freeze + mix.blackhole) {  // blackhole for 100..2000 ms
        if (impaired(node) || !room) return skip("blackhole", node);
        proxies_[node].blackhole();
        const milliseconds span{100 + a % 1901};
        s.heal_at = now + span;
        ++counts_["blackhole"];
        note("blackhole", node, "span_ms=" + std::to_string(span.count()));
    } else if (roll < mix.kill + mix.freeze + mix.blackhole + mix.latency) {
        add_latency(now, node, a, b, room);
    } else {
        drop(node, a, room);
    }
}

// Latency per direction, for 0.3..3 s.
void fault_injector::add_latency(clock::time_point now, std::size_t node, std::int64_t a,
                                 std::int64_t b, bool room) {
    node_state& s = state_[node];
    const auto& choices = settings_.latencies;
    const milliseconds latency = choices[static_cast<std::size_t>(a) % choices.size()];
    const bool slowed = std::ranges::any_of(
        state_, [](const node_state& other) { return other.latency_until.has_value(); });
    if (s.latency_until) return skip("latency", node);
    if (settings_.lone_latency && (slowed || impaired(node))) return skip("latency", node);
    if (latency >= settings_.impairing_latency && !impaired(node) && !room)
        return skip("latency", node);
    proxies_[node].set_latency(latency);
    const milliseconds span{300 + b % 2701};
    s.latency = latency;
    s.latency_until = now + span;
    ++counts_["latency"];
    note("latency", node,
         "ms=" + std::to_string(latency.count()) + " span_ms=" + std::to_string(span.count()));
}

// Drops every connection of a node: FIN or RST.
void fault_injector::drop(std::size_t node, std::int64_t a, bool room) {
    std::size_t target = node;
    if (settings_.aimed_drops) {
        for (std::size_t i = 0; i < state_.size() && (a / 2) % 2 == 0; ++i) {
            if (state_[i].heal_at || state_[i].latency_until) target = i;
        }
        if (!impaired(target) && !room) return skip("drop", node);
    }
    const bool reset = a % 2 == 1;
    proxies_[target].drop_connections(reset ? redlock_test::fault_proxy::drop_mode::reset
                                            : redlock_test::fault_proxy::drop_mode::close);
    ++counts_[reset ? "reset" : "drop"];
    note(reset ? "reset" : "drop", target);
}

void fault_injector::heal_links() {
    for (std::size_t i = 0; i < state_.size(); ++i) {
        node_state& s = state_[i];
        if (s.thaw_at) {
            nodes_[i].thaw();
            s.thaw_at.reset();
            note("thaw", i);
        }
        proxies_[i].heal();
        s.heal_at.reset();
        s.latency_until.reset();
        s.latency = 0ms;
    }
    note("healed-proxies", 0);
}

void fault_injector::restart_crashed() {
    for (std::size_t i = 0; i < state_.size(); ++i) {
        for (int attempt = 0; state_[i].restart_at; ++attempt) {
            if (attempt == 50) {
                throw std::runtime_error("node " + std::to_string(i) +
                                         " could not be restarted in 50 attempts");
            }
            // The delayed-restart rule holds to the end; a node it does not hold comes
            // back at once, and a failed restart is retried 100 ms later.
            if (attempt > 0 || restart_delayed(i))
                std::this_thread::sleep_until(*state_[i].restart_at);
            restart(i);
        }
    }
    note("healed-all", 0);
}

}  // namespace redlock_torture
