// redlock_session_renewal: what keeping N locks alive costs per renewal tick,
// with a session (one script call per node per tick for all of them) or with
// per-lock renewal (the watchdog: TIME and an extend per node per lock per
// tick). Issue 28, item 6; docs/benchmarks.md, "Sessions: renewal cost".
//
//   redlock_session_renewal --config configs/local.json --locks 1000 --mode session
//                           [--ticks 5] [--ttl-ms 3000] [--settle-ticks 1]
//
// Acquires N locks (at most --in-flight at once), lets the renewals settle,
// then over K ticks (a tick is lock.renew_fraction x TTL) counts the commands
// the client sent, the renewals, the servers' CPU and the renewal scripts'
// time per call, checking that every lock stays valid. Then it releases them
// all (close_session, or a release each) and checks the nodes hold no more
// keys than before. One JSON line on stdout, one human line on stderr; exit 1
// when a lock was lost or refused, or keys were left behind.
#include "session_renewal_nodes.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <redlock/redlock.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;
using redlock::bench::node_figures;

struct options {
    std::string config = "configs/local.json";
    std::size_t locks = 1000;
    std::string mode = "session";
    int ticks = 5;
    int ttl_ms = 3000;
    int settle_ticks = 1;
    std::size_t in_flight = 256;
    int spread_ms = -1;          // -1: one tick
    int request_timeout_ms = 0;  // 0: the config's
};

/// Callbacks' results, for a waiting thread. Every wait is bounded.
struct pending {
    std::mutex mutex;
    std::condition_variable changed;
    std::size_t running = 0;
    std::size_t failed = 0;
    std::string first_error;

    void finish(bool ok, const std::string& why) {
        std::lock_guard guard{mutex};
        --running;
        if (!ok && failed++ == 0) first_error = why;
        changed.notify_all();
    }
    /// Waits until at most `limit` run; false past `deadline`.
    auto wait_below(std::size_t limit, steady::time_point deadline) -> bool {
        std::unique_lock guard{mutex};
        return changed.wait_until(guard, deadline, [&] { return running <= limit; });
    }
};

auto cpu_seconds() -> double {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

/// The renewal scripts' calls and time over the window, all nodes.
struct script_window {
    std::uint64_t calls = 0;
    std::uint64_t usec = 0;
    double max_node_usec_per_call = 0;
};

auto scripts_between(const std::vector<node_figures>& a, const std::vector<node_figures>& b)
    -> script_window {
    script_window w;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        const auto calls =
            (b[i].evalsha.calls - a[i].evalsha.calls) + (b[i].eval.calls - a[i].eval.calls);
        const auto usec =
            (b[i].evalsha.usec - a[i].evalsha.usec) + (b[i].eval.usec - a[i].eval.usec);
        w.calls += calls;
        w.usec += usec;
        if (calls > 0)
            w.max_node_usec_per_call = std::max(
                w.max_node_usec_per_call, static_cast<double>(usec) / static_cast<double>(calls));
    }
    return w;
}

auto sum(const std::vector<node_figures>& nodes, auto field) -> double {
    double total = 0;
    for (const auto& n : nodes) total += static_cast<double>(field(n));
    return total;
}

auto round2(double v) -> double {
    return static_cast<double>(std::llround(v * 100)) / 100;
}

class bench_run {
public:
    bench_run(options o, redlock::client_config config, redlock::bench::node_probe probe)
        : o_{std::move(o)}, config_{std::move(config)}, probe_{std::move(probe)} {}

    auto run() -> int;

private:
    auto fail(const std::string& why) -> int {
        std::fprintf(stderr, "session_renewal: %s\n", why.c_str());
        return 1;
    }
    auto acquire_all(redlock::client& c) -> std::optional<std::size_t>;
    void release_all(redlock::client& c);
    auto wait_for_renewal(redlock::client& c, steady::duration limit) -> bool;
    auto watch_window(steady::time_point until) -> bool;

    options o_;
    redlock::client_config config_;
    redlock::bench::node_probe probe_;
    redlock::session session_;
    std::vector<redlock::lock> held_;
    std::size_t released_ = 0;
    milliseconds tick_{};
};

/// The acquisitions refused (a run goes on with the others), or nullopt when
/// some had not finished in time.
auto bench_run::acquire_all(redlock::client& c) -> std::optional<std::size_t> {
    redlock::lock_options lock_options;
    lock_options.attempts = 1;
    if (o_.mode == "session") {
        lock_options.session = session_;
    } else {
        lock_options.ttl = milliseconds{o_.ttl_ms};
        lock_options.auto_renew = true;
    }
    held_.assign(o_.locks, {});
    // Shared: a callback that comes after a timed-out wait finds it alive.
    const auto shared = std::make_shared<pending>();
    pending& p = *shared;
    const auto deadline = steady::now() + 120s;
    const std::string prefix = "sbench:" + o_.mode + ":";
    // Paced over the spread, as locks taken over time rather than in one burst: per-lock
    // renewals fire where their acquisitions ended, so this is how they spread over a tick.
    const auto start = steady::now();
    const milliseconds spread{o_.spread_ms < 0 ? tick_.count() : o_.spread_ms};
    for (std::size_t i = 0; i < o_.locks; ++i) {
        std::this_thread::sleep_until(start + spread * static_cast<double>(i) /
                                                  static_cast<double>(o_.locks));
        if (!p.wait_below(o_.in_flight - 1, deadline)) break;
        {
            std::lock_guard guard{p.mutex};
            ++p.running;
        }
        c.acquire_async(prefix + std::to_string(i), lock_options,
                        [this, shared, i](redlock::result<redlock::lock> r) {
                            if (r) held_[i] = std::move(*r);
                            shared->finish(r.has_value(), r ? std::string{} : r.error().message);
                        });
    }
    const bool drained = p.wait_below(0, deadline + 10s);
    std::lock_guard guard{p.mutex};
    if (!drained || p.failed > 0) {
        std::fprintf(stderr, "session_renewal: %zu acquisitions failed, %zu unfinished: %s\n",
                     p.failed, p.running, p.first_error.c_str());
    }
    if (!drained) return std::nullopt;
    return p.failed;
}

void bench_run::release_all(redlock::client& c) {
    if (!session_.empty()) {
        const auto closed = c.close_session(session_);
        released_ = closed ? closed->released : 0;
        return;
    }
    const auto shared = std::make_shared<pending>();
    pending& p = *shared;
    const auto deadline = steady::now() + 120s;
    for (const auto& l : held_) {
        if (l.empty()) continue;
        if (!p.wait_below(o_.in_flight - 1, deadline)) break;
        {
            std::lock_guard guard{p.mutex};
            ++p.running;
        }
        c.release_async(l, [shared](redlock::result<redlock::release_report> r) {
            shared->finish(r && r->majority(), r ? "no majority deleted" : r.error().message);
        });
    }
    (void)p.wait_below(0, deadline + 10s);
    std::lock_guard guard{p.mutex};
    std::size_t issued = 0;
    for (const auto& l : held_) issued += l.empty() ? 0 : 1;
    released_ = issued - p.failed - p.running;
}

/// Waits for the renewal counter to move (a round ended), at most `limit`.
auto bench_run::wait_for_renewal(redlock::client& c, steady::duration limit) -> bool {
    const auto start = c.stats().renewals;
    const auto until = steady::now() + limit;
    while (steady::now() < until) {
        if (c.stats().renewals != start) return true;
        std::this_thread::sleep_for(2ms);
    }
    return false;
}

/// Checks every lock every 50 ms until `until`: false once one is not valid.
auto bench_run::watch_window(steady::time_point until) -> bool {
    bool all_valid = true;
    for (int turn = 0; turn < 100'000 && steady::now() < until; ++turn) {
        for (const auto& l : held_)
            all_valid = all_valid && (l.empty() || (l.valid() && !l.lost()));
        if (!session_.empty()) all_valid = all_valid && !session_.lost();
        std::this_thread::sleep_for(std::min<steady::duration>(50ms, until - steady::now()));
    }
    return all_valid;
}

auto bench_run::run() -> int {
    const auto keys_before = probe_.keys();
    if (!keys_before) return fail("DBSIZE failed on a node");
    tick_ = std::chrono::ceil<milliseconds>(milliseconds{o_.ttl_ms} * config_.lock.renew_fraction);
    auto made = redlock::client::create(config_);
    if (!made) return fail("cannot create the client: " + made.error().message);
    redlock::client c = std::move(*made);
    for (int i = 0; i < 500 && c.stats().nodes_connected < c.node_count(); ++i)
        std::this_thread::sleep_for(10ms);
    if (c.stats().nodes_connected < c.node_count()) return fail("nodes not connected within 5 s");
    if (o_.mode == "session") {
        auto s = c.open_session({.ttl = milliseconds{o_.ttl_ms}});
        if (!s) return fail("open_session: " + s.error().message);
        session_ = *s;
    }

    // The servers' CPU with the client connected and nothing held: what a tick costs anyway
    // (serverCron, the probe's INFO).
    const auto idle0 = probe_.read();
    std::this_thread::sleep_for(tick_);
    const auto idle1 = probe_.read();
    if (!idle0 || !idle1) return fail("INFO failed on a node");

    const auto t_acquire = steady::now();
    const auto refused = acquire_all(c);
    if (!refused) return fail("acquisitions unfinished after 130 s");
    const double acquire_s = std::chrono::duration<double>(steady::now() - t_acquire).count();
    // A refused acquisition fails the run, which still measures the others: the refusal may
    // be the renewals' doing (a node blocked by a long script).
    bool all_valid = *refused == 0;
    // Steady state: the first rounds behind, then the window starts half a tick after a
    // round, so that it holds exactly K session rounds.
    std::this_thread::sleep_for(o_.settle_ticks * tick_);
    if (!wait_for_renewal(c, 2 * tick_)) all_valid = false;
    std::this_thread::sleep_for(tick_ / 2);
    // Another client's view: PINGs to every node through the window.
    auto pings = redlock::bench::node_probe::connect(config_);
    if (!pings) return fail("cannot connect the pinger");
    std::vector<double> rtts;
    std::jthread pinger{[&](std::stop_token stop) {
        for (int i = 0; i < 100'000 && !stop.stop_requested(); ++i) {
            const auto round = pings->ping();
            rtts.insert(rtts.end(), round.begin(), round.end());
            std::this_thread::sleep_for(10ms);
        }
    }};
    const auto s0 = c.stats();
    const auto n0 = probe_.read();
    const double cpu0 = cpu_seconds();
    const auto t0 = steady::now();
    all_valid = watch_window(t0 + o_.ticks * tick_) && all_valid;
    const auto t1 = steady::now();
    const double cpu1 = cpu_seconds();
    const auto n1 = probe_.read();
    const auto s1 = c.stats();
    pinger.request_stop();
    pinger.join();
    std::sort(rtts.begin(), rtts.end());
    const auto rtt_at = [&rtts](double q) {
        return rtts.empty() ? 0.0 : rtts[static_cast<std::size_t>(q * (rtts.size() - 1))];
    };
    if (!n0 || !n1) return fail("INFO failed on a node");
    all_valid = all_valid && s1.locks_lost == s0.locks_lost;

    const auto t_release = steady::now();
    release_all(c);
    const double release_s = std::chrono::duration<double>(steady::now() - t_release).count();
    // A release returns once a majority deleted; the others follow shortly.
    auto keys_after = probe_.keys();
    for (int i = 0; i < 100 && keys_after && *keys_after > *keys_before; ++i) {
        std::this_thread::sleep_for(50ms);
        keys_after = probe_.keys();
    }
    const auto locks_lost = c.stats().locks_lost;
    c.shutdown();

    const double k = o_.ticks;
    const auto scripts = scripts_between(*n0, *n1);
    const auto cpu = [](const node_figures& n) { return n.cpu_seconds; };
    const auto calls = [](const node_figures& n) { return n.calls; };
    const auto time_calls = [](const node_figures& n) { return n.time.calls; };
    const bool empty = keys_after && *keys_after <= *keys_before;
    const nlohmann::ordered_json out{
        {"locks", o_.locks},
        {"nodes", config_.nodes.size()},
        {"request_timeout_ms", config_.request_timeout.count()},
        {"mode", o_.mode},
        {"ticks", o_.ticks},
        {"ttl_ms", o_.ttl_ms},
        {"tick_ms", tick_.count()},
        {"window_ms", std::chrono::duration_cast<milliseconds>(t1 - t0).count()},
        {"commands_per_tick", round2(static_cast<double>(s1.requests - s0.requests) / k)},
        {"renewals_per_tick", round2(static_cast<double>(s1.renewals - s0.renewals) / k)},
        {"server_cpu_ms_per_tick", round2((sum(*n1, cpu) - sum(*n0, cpu)) * 1000 / k)},
        {"server_cpu_idle_ms_per_tick", round2((sum(*idle1, cpu) - sum(*idle0, cpu)) * 1000)},
        {"client_cpu_ms_per_tick", round2((cpu1 - cpu0) * 1000 / k)},
        {"redis_calls_per_tick", round2((sum(*n1, calls) - sum(*n0, calls)) / k)},
        {"time_calls_per_tick", round2((sum(*n1, time_calls) - sum(*n0, time_calls)) / k)},
        {"script_calls_per_tick", round2(static_cast<double>(scripts.calls) / k)},
        {"script_usec_per_call",
         round2(scripts.calls > 0 ? static_cast<double>(scripts.usec) / scripts.calls : 0)},
        {"script_usec_per_call_max_node", round2(scripts.max_node_usec_per_call)},
        {"ping_ms_p50", round2(rtt_at(0.5))},
        {"ping_ms_max", round2(rtt_at(1.0))},
        {"timeouts", s1.timeouts - s0.timeouts},
        {"acquire_s", round2(acquire_s)},
        {"all_valid", all_valid},
        {"acquire_failures", *refused},
        {"locks_lost_before_window", s0.locks_lost},
        {"locks_lost_in_window", s1.locks_lost - s0.locks_lost},
        {"locks_lost", locks_lost},
        {"released", released_},
        {"release_s", round2(release_s)},
        {"keys_left",
         keys_after ? static_cast<long long>(*keys_after) - static_cast<long long>(*keys_before)
                    : -1LL},
        {"servers_empty", empty},
    };
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
    std::fprintf(stderr,
                 "session_renewal: %zu locks, %s: %.1f commands/tick, %.0f renewals/tick, "
                 "servers' CPU %.2f ms/tick, scripts %.0f us/call, PING max %.1f ms, %s, %s\n",
                 o_.locks, o_.mode.c_str(), out["commands_per_tick"].get<double>(),
                 out["renewals_per_tick"].get<double>(),
                 out["server_cpu_ms_per_tick"].get<double>(),
                 out["script_usec_per_call"].get<double>(), out["ping_ms_max"].get<double>(),
                 all_valid ? "every lock valid" : "A LOCK WAS LOST OR REFUSED",
                 empty ? "servers empty after release" : "KEYS LEFT after release");
    return all_valid && empty ? 0 : 1;
}

}  // namespace

auto main(int argc, char** argv) -> int {
    options o;
    CLI::App app{"Renewal cost of N held locks: a session against per-lock renewal"};
    app.add_option("--config", o.config, "JSON config of the nodes")->check(CLI::ExistingFile);
    app.add_option("--locks", o.locks, "locks held")->check(CLI::Range(1, 100'000));
    app.add_option("--mode", o.mode, "session or per-lock")
        ->check(CLI::IsMember({"session", "per-lock"}));
    app.add_option("--ticks", o.ticks, "renewal ticks measured")->check(CLI::Range(1, 60));
    app.add_option("--ttl-ms", o.ttl_ms, "lock TTL; a tick is lock.renew_fraction of it")
        ->check(CLI::Range(300, 60'000));
    app.add_option("--settle-ticks", o.settle_ticks, "ticks waited before measuring")
        ->check(CLI::Range(0, 20));
    app.add_option("--in-flight", o.in_flight, "acquisitions (releases) at once")
        ->check(CLI::Range(1, 10'000));
    app.add_option("--spread-ms", o.spread_ms,
                   "acquisitions paced evenly over this long (-1: one tick; 0: at once)")
        ->check(CLI::Range(-1, 60'000));
    app.add_option("--request-timeout-ms", o.request_timeout_ms,
                   "overrides the config's request_timeout_ms (0: keep it)")
        ->check(CLI::Range(0, 10'000));
    CLI11_PARSE(app, argc, argv);

    auto config = redlock::load_config(o.config);
    if (!config) {
        std::fprintf(stderr, "session_renewal: %s\n", config.error().what().c_str());
        return 2;
    }
    if (o.request_timeout_ms > 0) config->request_timeout = milliseconds{o.request_timeout_ms};
    auto probe = redlock::bench::node_probe::connect(*config);
    if (!probe) return 2;
    return bench_run{std::move(o), std::move(*config), std::move(*probe)}.run();
}
