// Waiting under contention, the four wait modes side by side in one run on the
// same nodes: C contenders (one client each) take one resource in a loop with a
// short critical section. Reports grants per second, hand-off latency (release
// -> next grant), Redis commands per grant, and the spread of wait times
// (max/median, Jain's fairness index over grants per contender).
//
//   redlock_wait_bench --config configs/local.json [--contenders 16,64]
//                      [--hold-ms 1] [--seconds 5] [--json out.json]
#include <hiredis/hiredis.h>
#include <redlock/redlock.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

struct options {
    std::string config = "configs/local.json";
    std::vector<int> contenders{16, 64};
    int hold_ms = 1;
    int seconds = 5;
    std::string json;
};

struct event {
    steady::time_point asked;
    steady::time_point granted;
    steady::time_point released;
    int who;
};

struct result {
    std::string mode;
    int contenders = 0;
    double grants_per_s = 0;
    double handoff_p50_ms = 0;
    double handoff_p99_ms = 0;
    double commands_per_grant = 0;     // sent by the clients (EVAL/EVALSHA/SET)
    double redis_calls_per_grant = 0;  // INFO commandstats, script-internal calls included
    double wait_max_over_median = 0;
    double jain = 0;
    long long grants = 0;
    long long failures = 0;
};

auto ms(steady::duration d) -> double {
    return std::chrono::duration<double, std::milli>(d).count();
}

auto percentile(std::vector<double> v, double p) -> double {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
    return v[i];
}

/// Sum of every command's calls on every node (INFO excluded), from commandstats.
auto redis_calls(const redlock::client_config& config) -> long long {
    long long total = 0;
    for (const auto& node : config.nodes) {
        redisContext* c = redisConnect(node.host.c_str(), node.port);
        if (c == nullptr || c->err != 0) {
            if (c != nullptr) redisFree(c);
            continue;
        }
        auto* r = static_cast<redisReply*>(redisCommand(c, "INFO commandstats"));
        if (r != nullptr && r->type == REDIS_REPLY_STRING) {
            const std::string text{r->str, r->len};
            std::size_t at = 0;
            while ((at = text.find("cmdstat_", at)) != std::string::npos) {
                const std::size_t colon = text.find(':', at);
                const std::string name = text.substr(at + 8, colon - at - 8);
                const std::size_t calls = text.find("calls=", colon) + 6;
                if (name != "info")
                    total += std::stoll(text.substr(calls, text.find(',', calls) - calls));
                at = colon;
            }
        }
        if (r != nullptr) freeReplyObject(r);
        redisFree(c);
    }
    return total;
}

auto run_mode(const redlock::client_config& config, redlock::wait_mode mode, const char* name,
              int contenders, const options& opt) -> result {
    std::vector<redlock::client> clients;
    for (int i = 0; i < contenders; ++i) {
        auto c = redlock::client::create(config);
        if (!c) throw std::runtime_error(c.error().message);
        clients.push_back(std::move(*c));
    }
    for (auto& c : clients) {  // connected before the clock starts
        const auto until = steady::now() + 2s;
        while (c.stats().nodes_connected < config.nodes.size() && steady::now() < until) {
            std::this_thread::sleep_for(5ms);
        }
    }
    const std::string resource =
        std::string{"bench:wait:"} + name + ":" + std::to_string(contenders);
    std::mutex mutex;
    std::vector<event> events;
    std::atomic<long long> failures{0};
    std::atomic<bool> stop{false};
    const long long calls_before = redis_calls(config);
    std::uint64_t requests_before = 0;
    for (auto& c : clients) requests_before += c.stats().requests;
    const auto start = steady::now();

    std::vector<std::thread> threads;
    for (int i = 0; i < contenders; ++i) {
        threads.emplace_back([&, i] {
            auto& locks = clients[static_cast<std::size_t>(i)];
            while (!stop.load()) {
                redlock::lock_options wait;
                wait.ttl = 2s;
                wait.max_wait = 10s;
                wait.wait = mode;
                const auto asked = steady::now();
                auto held = locks.acquire(resource, wait);
                if (!held) {
                    ++failures;
                    continue;
                }
                const auto granted = steady::now();
                std::this_thread::sleep_for(std::chrono::milliseconds{opt.hold_ms});
                const auto released = steady::now();
                (void)locks.release(*held);
                std::lock_guard guard{mutex};
                events.push_back({asked, granted, released, i});
            }
        });
    }
    std::this_thread::sleep_for(std::chrono::seconds{opt.seconds});
    stop = true;
    for (auto& t : threads) t.join();
    const auto elapsed = steady::now() - start;
    std::uint64_t requests_after = 0;
    for (auto& c : clients) requests_after += c.stats().requests;
    const long long calls_after = redis_calls(config);

    result r;
    r.mode = name;
    r.contenders = contenders;
    r.grants = static_cast<long long>(events.size());
    r.failures = failures;
    r.grants_per_s =
        static_cast<double>(events.size()) / std::chrono::duration<double>(elapsed).count();
    std::sort(events.begin(), events.end(),
              [](const event& a, const event& b) { return a.granted < b.granted; });
    std::vector<double> handoffs;
    std::vector<double> waits;
    std::vector<double> per_contender(static_cast<std::size_t>(contenders), 0.0);
    for (std::size_t i = 0; i < events.size(); ++i) {
        if (i > 0) handoffs.push_back(ms(events[i].granted - events[i - 1].released));
        waits.push_back(ms(events[i].granted - events[i].asked));
        per_contender[static_cast<std::size_t>(events[i].who)] += 1;
    }
    r.handoff_p50_ms = percentile(handoffs, 0.50);
    r.handoff_p99_ms = percentile(handoffs, 0.99);
    const double grants = std::max(1.0, static_cast<double>(events.size()));
    r.commands_per_grant = static_cast<double>(requests_after - requests_before) / grants;
    r.redis_calls_per_grant = static_cast<double>(calls_after - calls_before) / grants;
    const double median = std::max(percentile(waits, 0.5), 1e-9);
    r.wait_max_over_median =
        waits.empty() ? 0 : *std::max_element(waits.begin(), waits.end()) / median;
    const double sum = std::accumulate(per_contender.begin(), per_contender.end(), 0.0);
    double squares = 0;
    for (double x : per_contender) squares += x * x;
    r.jain = squares > 0 ? sum * sum / (static_cast<double>(contenders) * squares) : 0;
    return r;
}

auto parse(int argc, char** argv) -> options {
    options opt;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto next = [&] { return i + 1 < argc ? std::string{argv[++i]} : std::string{}; };
        if (a == "--config") {
            opt.config = next();
        } else if (a == "--contenders") {
            opt.contenders.clear();
            std::stringstream list{next()};
            for (std::string n; std::getline(list, n, ',');) opt.contenders.push_back(std::stoi(n));
        } else if (a == "--hold-ms") {
            opt.hold_ms = std::stoi(next());
        } else if (a == "--seconds") {
            opt.seconds = std::stoi(next());
        } else if (a == "--json") {
            opt.json = next();
        } else {
            std::fprintf(stderr,
                         "usage: %s --config FILE [--contenders 16,64] [--hold-ms 1] [--seconds 5] "
                         "[--json FILE]\n",
                         argv[0]);
            std::exit(64);
        }
    }
    return opt;
}

}  // namespace

int main(int argc, char** argv) {
    const options opt = parse(argc, argv);
    auto config = redlock::load_config(opt.config);
    if (!config) {
        std::fprintf(stderr, "%s\n", config.error().what().c_str());
        return 78;
    }
    config->logger = [](redlock::log_level, std::string_view) {};
    const std::pair<redlock::wait_mode, const char*> modes[] = {
        {redlock::wait_mode::poll, "poll (jittered retry)"},
        {redlock::wait_mode::broadcast, "broadcast"},
        {redlock::wait_mode::targeted, "targeted (default)"},
        {redlock::wait_mode::fair, "fair"},
    };
    std::vector<result> results;
    std::printf("%-22s %5s %9s %9s %9s %9s %9s %9s %6s\n", "mode", "C", "grants/s", "hand p50",
                "hand p99", "cmd/grant", "calls/gr", "wait mx/md", "jain");
    for (int c : opt.contenders) {
        for (const auto& [mode, name] : modes) {
            const result r = run_mode(*config, mode, name, c, opt);
            std::printf("%-22s %5d %9.1f %8.2fms %8.2fms %9.1f %9.1f %9.1f %6.3f\n", name, c,
                        r.grants_per_s, r.handoff_p50_ms, r.handoff_p99_ms, r.commands_per_grant,
                        r.redis_calls_per_grant, r.wait_max_over_median, r.jain);
            std::fflush(stdout);
            results.push_back(r);
        }
    }
    if (!opt.json.empty()) {
        std::ofstream out{opt.json};
        out << "[\n";
        for (std::size_t i = 0; i < results.size(); ++i) {
            const result& r = results[i];
            out << "  {\"mode\": \"" << r.mode << "\", \"contenders\": " << r.contenders
                << ", \"grants\": " << r.grants << ", \"failures\": " << r.failures
                << ", \"grants_per_s\": " << r.grants_per_s
                << ", \"handoff_p50_ms\": " << r.handoff_p50_ms
                << ", \"handoff_p99_ms\": " << r.handoff_p99_ms
                << ", \"commands_per_grant\": " << r.commands_per_grant
                << ", \"redis_calls_per_grant\": " << r.redis_calls_per_grant
                << ", \"wait_max_over_median\": " << r.wait_max_over_median
                << ", \"jain\": " << r.jain << "}" << (i + 1 < results.size() ? "," : "") << "\n";
        }
        out << "]\n";
    }
    return 0;
}
