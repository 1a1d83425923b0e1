// The election API's overhead on an uncontended campaign: campaign + resign
// against acquire + release, alternating (bench/election_bench.cpp).
#include "election_bench.hpp"

#include <array>
#include <cstdio>
#include <functional>
#include <thread>

namespace redlock::bench {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

/// When the take returned, and the requests sent so far then.
struct mark {
    steady::time_point at{};
    std::uint64_t requests = 0;

    void set(const client& c) {
        at = steady::now();
        requests = c.stats().requests;
    }
};

/// One kind of cycle: take (campaign or acquire), then give back.
struct variant {
    variant(const char* n, const char* w, std::function<bool(client&, mark*)> c)
        : name{n}, what{w}, cycle{std::move(c)} {}

    const char* name;
    const char* what;
    /// Takes, then gives back; false (said on stderr) when either failed.
    std::function<bool(client&, mark*)> cycle;
    std::vector<double> take_ms, give_ms, cycle_ms;
    std::uint64_t take_requests = 0, give_requests = 0, counted = 0;
};

auto say(const char* variant, const char* step, const error& e) -> bool {
    std::fprintf(stderr, "election_bench: %s: %s: %s\n", variant, step, e.message.c_str());
    return false;
}

auto acquire_cycle(const char* name, lock_options lo) {
    return [name, lo](client& c, mark* taken) {
        auto held = c.acquire(std::string{"ebench:overhead:"} + name, lo);
        taken->set(c);
        if (!held) return say(name, "acquire", held.error());
        auto gone = c.release(*held);
        return gone ? true : say(name, "release", gone.error());
    };
}

auto variants(milliseconds ttl) -> std::vector<variant> {
    std::vector<variant> v;
    v.emplace_back("campaign", "campaign + resign", [ttl](client& c, mark* taken) {
        campaign_options co;
        co.ttl = ttl;
        co.max_wait = 10s;
        auto leading = c.campaign("ebench:overhead:campaign", "p", co);
        taken->set(c);
        if (!leading) return say("campaign", "campaign", leading.error());
        auto gone = leading->resign();
        return gone ? true : say("campaign", "resign", gone.error());
    });
    lock_options by_hand;  // the campaign's lock, without the election
    by_hand.ttl = ttl;
    by_hand.fencing = true;
    by_hand.auto_renew = true;
    by_hand.wait = wait_mode::fair;
    by_hand.max_wait = 10s;
    v.emplace_back("by-hand", "acquire (fencing, auto_renew, fair) + release",
                   acquire_cycle("by-hand", by_hand));
    lock_options fenced;
    fenced.ttl = ttl;
    fenced.fencing = true;
    v.emplace_back("fenced", "acquire (fencing) + release", acquire_cycle("fenced", fenced));
    lock_options plain;
    plain.ttl = ttl;
    v.emplace_back("plain", "acquire + release", acquire_cycle("plain", plain));
    return v;
}

auto ratio(double a, double b) -> double {
    return b > 0 ? round3(a / b) : 0;
}

}  // namespace

auto overhead_rounds(const election_options& o, const client_config& config)
    -> nlohmann::ordered_json {
    auto made = client::create(config);
    if (!made || !all_connected(*made)) {
        std::fprintf(stderr, "election_bench: overhead: %s\n",
                     made ? "the nodes did not all connect" : made.error().message.c_str());
        return {{"ok", false}, {"error", "not connected"}};
    }
    client& c = *made;
    auto all = variants(milliseconds{o.ttl_ms});
    std::vector<variant*> order;
    for (auto& v : all)
        if (o.only.empty() || o.only == v.name) order.push_back(&v);
    if (order.empty()) return {{"ok", false}, {"error", "no variant named " + o.only}};
    bool ok = true;
    // ABCD then DCBA: each variant runs as often first as last.
    for (int i = 0; i < o.warmup + o.iterations && ok; ++i) {
        const bool counted = i >= o.warmup;
        for (std::size_t j = 0; j < order.size() && ok; ++j) {
            variant& v = *order[i % 2 == 0 ? j : order.size() - 1 - j];
            const auto r0 = c.stats().requests;
            const auto t0 = steady::now();
            mark taken;
            ok = v.cycle(c, &taken);
            const auto t2 = steady::now();
            const auto r2 = c.stats().requests;
            if (!ok || !counted) continue;
            v.take_ms.push_back(ms_between(t0, taken.at));
            v.give_ms.push_back(ms_between(taken.at, t2));
            v.cycle_ms.push_back(ms_between(t0, t2));
            v.take_requests += taken.requests - r0;
            v.give_requests += r2 - taken.requests;
            ++v.counted;
        }
    }
    nlohmann::ordered_json out = {{"ok", ok}, {"iterations", o.iterations}, {"warmup", o.warmup}};
    for (variant* v : order) {
        const auto per = [v](std::uint64_t n) {
            return v->counted ? round3(static_cast<double>(n) / static_cast<double>(v->counted))
                              : 0.0;
        };
        out["variants"][v->name] = {{"what", v->what},
                                    {"take_ms", summary(v->take_ms)},
                                    {"give_ms", summary(v->give_ms)},
                                    {"cycle_ms", summary(v->cycle_ms)},
                                    {"requests_take", per(v->take_requests)},
                                    {"requests_give", per(v->give_requests)}};
    }
    if (o.only.empty() && ok) {
        const auto p50 = [&](const char* name, const char* what) {
            return out["variants"][name][what]["p50"].get<double>();
        };
        for (const char* base : {"by-hand", "fenced", "plain"}) {
            out["ratios"][std::string{"campaign/"} + base] = {
                {"take", ratio(p50("campaign", "take_ms"), p50(base, "take_ms"))},
                {"cycle", ratio(p50("campaign", "cycle_ms"), p50(base, "cycle_ms"))}};
        }
        // One majority round trip, two ways: a plain acquire (above), a leader() read.
        std::vector<double> reads;
        const auto r0 = c.stats().requests;
        for (int i = 0; i < o.iterations; ++i) {
            const auto t0 = steady::now();
            auto view = c.leader("ebench:overhead:campaign");
            if (!view) {
                ok = say("leader", "read", view.error());
                break;
            }
            reads.push_back(ms_between(t0, steady::now()));
        }
        out["leader_read_ms"] = summary(reads);
        out["leader_read_requests"] = reads.empty()
                                          ? 0.0
                                          : round3(static_cast<double>(c.stats().requests - r0) /
                                                   static_cast<double>(reads.size()));
        out["ok"] = ok;
    }
    c.shutdown();
    return out;
}

}  // namespace redlock::bench
