#include "cli_stress_faults.hpp"

#include "record.hpp"

#include <stdexcept>
#include <thread>

namespace redlock_torture {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

cli_fault_schedule::cli_fault_schedule(std::vector<redlock_test::redis_server>& nodes,
                                       std::vector<redlock_test::fault_proxy>& proxies,
                                       settings limits, std::uint64_t seed, std::FILE* log)
    : nodes_{nodes},
      proxies_{proxies},
      limits_{limits},
      rng_{seed},
      log_{log},
      state_(nodes.size()),
      next_fault_{clock::now() + 300ms} {
    if (proxies_.size() != nodes_.size())
        throw std::invalid_argument("cli_fault_schedule: one proxy per node");
    for (const char* kind :
         {"kill", "freeze", "blackhole", "latency", "drop", "reset", "skipped", "restart_failed"})
        counts_[kind] = 0;
}

auto cli_fault_schedule::uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t {
    return std::uniform_int_distribution<std::int64_t>{lo, hi}(rng_);
}

void cli_fault_schedule::note(const char* what, std::size_t node, const std::string& detail) {
    if (log_ == nullptr) return;
    std::fprintf(
        log_, "%lld %s node=%zu port=%u proxy=%u%s%s\n", static_cast<long long>(monotonic_ns()),
        what, node, static_cast<unsigned>(nodes_[node].port()),
        static_cast<unsigned>(proxies_[node].port()), detail.empty() ? "" : " ", detail.c_str());
    std::fflush(log_);
}

auto cli_fault_schedule::injected() const -> std::uint64_t {
    std::uint64_t n = 0;
    for (const auto& [kind, count] : counts_) {
        if (kind != "skipped" && kind != "restart_failed") n += count;
    }
    return n;
}

auto cli_fault_schedule::faulted(std::size_t i) const -> bool {
    const node_state& s = state_[i];
    return s.restart_at || s.thaw_at || s.heal_at || s.latency_until;
}

auto cli_fault_schedule::faulted_count() const -> std::size_t {
    std::size_t n = 0;
    for (std::size_t i = 0; i < state_.size(); ++i) n += faulted(i) ? 1 : 0;
    return n;
}

auto cli_fault_schedule::restart(std::size_t i) -> bool {
    try {
        nodes_[i].restart();
        state_[i].restart_at.reset();
        note("restart", i);
        return true;
    } catch (const std::exception& e) {
        // Its port was taken meanwhile (the ephemeral port of some connection): retry.
        state_[i].restart_at = clock::now() + 100ms;
        ++counts_["restart_failed"];
        note("restart-failed", i, e.what());
        return false;
    }
}

void cli_fault_schedule::end_due(clock::time_point now) {
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
            s.heal_at.reset();
            note("heal", i);
        }
        if (s.latency_until && *s.latency_until <= now) {
            proxies_[i].set_latency(0ms);
            s.latency_until.reset();
            note("latency-end", i);
        }
    }
}

void cli_fault_schedule::step() {
    const auto now = clock::now();
    end_due(now);
    if (now >= next_fault_) inject(now);
    most_faulted_ = std::max(most_faulted_, faulted_count());
}

void cli_fault_schedule::inject(clock::time_point now) {
    const auto roll = uniform(0, 99);
    const auto node = static_cast<std::size_t>(uniform(0, std::ssize(nodes_) - 1));
    const auto a = uniform(0, 1'000'000);
    next_fault_ = now + milliseconds{uniform(50, 400)};

    node_state& s = state_[node];
    // A fault on a node already faulted would stack (and end early); one on a healthy
    // node needs room under the limit. A drop counts too: its connections fail at once.
    const bool room = !faulted(node) && faulted_count() < limits_.max_faulted;
    auto skip = [&](const char* what) {
        ++counts_["skipped"];
        note("skip", node, what);
    };

    if (roll < 10) {  // SIGKILL; it persists every write, so it may come back soon
        if (!room) return skip("kill");
        nodes_[node].crash();
        const milliseconds down{a % 1500};
        s.restart_at = now + down;
        ++counts_["kill"];
        note("kill", node, "down_ms=" + std::to_string(down.count()));
    } else if (roll < 25) {  // SIGSTOP for 100..800 ms
        if (!room) return skip("freeze");
        nodes_[node].freeze();
        const milliseconds pause{100 + a % 701};
        s.thaw_at = now + pause;
        ++counts_["freeze"];
        note("freeze", node, "pause_ms=" + std::to_string(pause.count()));
    } else if (roll < 45) {  // blackhole for 100..2000 ms
        if (!room) return skip("blackhole");
        proxies_[node].blackhole();
        const milliseconds span{100 + a % 1901};
        s.heal_at = now + span;
        ++counts_["blackhole"];
        note("blackhole", node, "span_ms=" + std::to_string(span.count()));
    } else if (roll < 65) {  // latency on one node at a time, for 0.3..3 s
        bool slowed = false;
        for (const auto& other : state_) slowed = slowed || other.latency_until.has_value();
        if (!room || slowed) return skip("latency");
        const auto spread = limits_.latency_max.count() - limits_.latency_min.count() + 1;
        const milliseconds latency{limits_.latency_min.count() + a % spread};
        const milliseconds span{300 + (a / 1000) % 2701};
        proxies_[node].set_latency(latency);
        s.latency_until = now + span;
        ++counts_["latency"];
        note("latency", node,
             "ms=" + std::to_string(latency.count()) + " span_ms=" + std::to_string(span.count()));
    } else {  // drop every connection, by FIN or by RST
        // Half of the drops go to a blackholed or slowed node, if there is one: its
        // connections owe replies whose timeouts are running, and a connection failing
        // while it is being given up on is where a double uv_close once hid.
        std::size_t target = node;
        for (std::size_t i = 0; i < state_.size() && (a / 2) % 2 == 0; ++i) {
            if (state_[i].heal_at || state_[i].latency_until) target = i;
        }
        if (!faulted(target) && faulted_count() >= limits_.max_faulted) return skip("drop");
        const bool reset = a % 2 == 1;
        proxies_[target].drop_connections(reset ? redlock_test::fault_proxy::drop_mode::reset
                                                : redlock_test::fault_proxy::drop_mode::close);
        ++counts_[reset ? "reset" : "drop"];
        note(reset ? "reset" : "drop", target);
    }
}

void cli_fault_schedule::heal_all() {
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
    }
    for (std::size_t i = 0; i < state_.size(); ++i) {
        for (int attempt = 0; state_[i].restart_at; ++attempt) {
            if (attempt == 50) {
                throw std::runtime_error("node " + std::to_string(i) +
                                         " could not be restarted in 50 attempts");
            }
            if (!restart(i)) std::this_thread::sleep_for(100ms);
        }
    }
    note("healed-all", 0);
}

}  // namespace redlock_torture
