// Failover: a leader process is SIGKILLed while a standby in this process
// campaigns; how long until the standby leads (bench/election_bench.cpp).
#include "election_bench.hpp"
#include "session_renewal_nodes.hpp"

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <poll.h>
#include <random>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace redlock::bench {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

const std::string election = "ebench:failover";

auto fail_json(std::string why) -> nlohmann::ordered_json {
    std::fprintf(stderr, "election_bench: failover: %s\n", why.c_str());
    return {{"ok", false}, {"error", std::move(why)}};
}

/// A leader process (this binary in helper mode), its stdout read here.
struct leader_process {
    pid_t pid = -1;
    int out = -1;

    /// Its term, once it leads; nullopt when it said nothing by `deadline`.
    auto term(steady::time_point deadline) const -> std::optional<std::uint64_t> {
        std::string line;
        while (line.find('\n') == std::string::npos) {
            const auto left = std::chrono::ceil<milliseconds>(deadline - steady::now()).count();
            pollfd p{out, POLLIN, 0};
            if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return std::nullopt;
            char buf[64];
            const ssize_t n = read(out, buf, sizeof buf);
            if (n <= 0) return std::nullopt;
            line.append(buf, static_cast<std::size_t>(n));
        }
        return std::strtoull(line.c_str(), nullptr, 10);
    }
    void kill_and_reap() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
            pid = -1;
        }
        if (out >= 0) close(out);
        out = -1;
    }
};

auto spawn_leader(const election_options& o) -> std::optional<leader_process> {
    // Everything the child needs is made before fork: after it, only exec.
    std::vector<std::string> args{o.self,
                                  "--config",
                                  o.config,
                                  "--ttl-ms",
                                  std::to_string(o.ttl_ms),
                                  "--request-timeout-ms",
                                  std::to_string(o.request_timeout_ms),
                                  "--lead",
                                  election};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return std::nullopt;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(fds[1]);
    return leader_process{pid, fds[0]};
}

/// The standby's campaign, as its callback delivers it.
struct standby {
    std::mutex mutex;
    std::condition_variable changed;
    std::optional<result<leadership>> outcome;
    steady::time_point at{};

    auto wait_until(steady::time_point deadline) -> bool {
        std::unique_lock hold{mutex};
        return changed.wait_until(hold, deadline, [&] { return outcome.has_value(); });
    }
};

/// When a majority of the nodes will have let `key` expire (a node without it is free now).
auto majority_expiry(node_probe& probe, const std::string& key, std::size_t quorum)
    -> steady::time_point {
    const auto now = steady::now();
    std::vector<steady::time_point> at;
    for (const auto& e : probe.expiries(key)) at.push_back(e.value_or(now));
    std::sort(at.begin(), at.end());
    return at.empty() ? now : at[std::min(quorum, at.size()) - 1];
}

}  // namespace

auto lead_until_killed(const election_options& o, const client_config& config) -> int {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the bench
    if (getppid() == 1) return 3;
    auto made = client::create(config);
    if (!made || !all_connected(*made)) return 2;
    campaign_options co;
    co.ttl = milliseconds{o.ttl_ms};
    co.max_wait = 15s;
    co.holder = "election_bench leader " + std::to_string(getpid());
    auto leading = made->campaign(o.lead, "leader-" + std::to_string(getpid()), co);
    if (!leading) {
        std::fprintf(stderr, "election_bench: leader: %s\n", leading.error().message.c_str());
        return 1;
    }
    std::printf("%llu\n", static_cast<unsigned long long>(leading->term()));
    std::fflush(stdout);
    const auto until = steady::now() + std::chrono::seconds{o.lead_life_s};
    while (steady::now() < until) {
        if (leading->lost()) return 4;
        std::this_thread::sleep_for(20ms);
    }
    return leading->resign() ? 0 : 1;
}

auto failover_trials(const election_options& o, const client_config& config)
    -> nlohmann::ordered_json {
    auto probe = node_probe::connect(config);
    if (!probe) return fail_json("cannot connect the PTTL probe");
    auto made = client::create(config);
    if (!made || !all_connected(*made)) return fail_json("the standby's client did not connect");
    client& c = *made;
    const std::size_t quorum = c.node_count() / 2 + 1;
    const std::string lock_key = config.key_prefix + "{" + election + "}";
    std::mt19937 rng{std::random_device{}()};
    std::uniform_int_distribution<int> kill_delay{0, o.ttl_ms - 1};
    const auto stop_starting = steady::now() + std::chrono::seconds{o.max_seconds};

    nlohmann::ordered_json trials = nlohmann::json::array();
    std::vector<double> failover, to_expiry, after_expiry;
    bool ok = true;
    std::string first_error;
    const auto trouble = [&](std::string why) {
        std::fprintf(stderr, "election_bench: failover trial %zu: %s\n", trials.size(),
                     why.c_str());
        if (ok) first_error = std::move(why);
        ok = false;
    };
    for (int k = 0; k < o.trials && steady::now() < stop_starting; ++k) {
        auto leader = spawn_leader(o);
        if (!leader) {
            trouble("cannot start the leader process");
            break;
        }
        const auto leader_term = leader->term(steady::now() + 20s);
        if (!leader_term) {
            leader->kill_and_reap();
            trouble("the leader process did not lead within 20 s");
            break;
        }
        // The standby campaigns, is refused, and waits in line.
        const auto s0 = c.stats();
        auto s = std::make_shared<standby>();
        campaign_options co;
        co.ttl = milliseconds{o.ttl_ms};
        co.max_wait = milliseconds{3 * o.ttl_ms} + 10s;
        const auto ticket = c.campaign_async(election, "standby", co, [s](result<leadership> r) {
            const auto now = steady::now();
            std::lock_guard hold{s->mutex};
            s->at = now;
            s->outcome = std::move(r);
            s->changed.notify_all();
        });
        for (int i = 0; i < 300 && c.stats().attempts == s0.attempts; ++i)
            std::this_thread::sleep_for(10ms);
        // The kill at a random moment of the leader's renewal cycle.
        std::this_thread::sleep_for(milliseconds{kill_delay(rng)});
        const auto killed = steady::now();
        leader->kill_and_reap();
        const auto expiry = majority_expiry(*probe, lock_key, quorum);
        if (!s->wait_until(killed + milliseconds{o.ttl_ms} + 10s)) {
            c.cancel(ticket);
            s->wait_until(steady::now() + 5s);
            trouble("the standby did not lead within TTL + 10 s");
            break;
        }
        std::lock_guard hold{s->mutex};
        if (!*s->outcome) {
            trouble("the standby's campaign failed: " + s->outcome->error().message);
            break;
        }
        leadership& won = **s->outcome;
        const auto s1 = c.stats();
        const double f = ms_between(killed, s->at);
        const double e = ms_between(killed, expiry);
        failover.push_back(f);
        to_expiry.push_back(e);
        after_expiry.push_back(f - e);
        trials.push_back({{"leader_term", *leader_term},
                          {"standby_term", won.term()},
                          {"failover_ms", round3(f)},
                          {"kill_to_expiry_ms", round3(e)},
                          {"after_expiry_ms", round3(f - e)},
                          {"standby_attempts", s1.attempts - s0.attempts},
                          {"standby_requests", s1.requests - s0.requests}});
        if (won.term() <= *leader_term)
            trouble("the standby's term " + std::to_string(won.term()) + " is not above " +
                    std::to_string(*leader_term));
        if (auto r = won.resign(); !r) trouble("the standby's resign: " + r.error().message);
    }
    if (static_cast<int>(trials.size()) < o.trials && ok)
        std::fprintf(stderr, "election_bench: failover: %zu of %d trials within %d s\n",
                     trials.size(), o.trials, o.max_seconds);
    c.shutdown();
    return {{"ok", ok && !trials.empty()},
            {"error", first_error},
            {"trials_asked", o.trials},
            {"trials_done", trials.size()},
            {"failover_ms", summary(failover)},
            {"kill_to_expiry_ms", summary(to_expiry)},
            {"after_expiry_ms", summary(after_expiry)},
            {"trials", trials}};
}

}  // namespace redlock::bench
