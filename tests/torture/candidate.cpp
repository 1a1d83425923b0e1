// A torture candidate: one process campaigning for one election through the public API until
// its standard input closes. While it leads it writes to a fenced store (modelled: each write
// is a record with its term and time; election_checker.hpp replays the store), then ends its
// term of office one of three ways: it resigns; it abandons the leadership (destroys its
// client: no more renewals, no resignation, so the next leader takes over once the lock
// expires) and, after a while, makes one late write with its old term, as a leader that
// paused would; or it finds the leadership lost (lost(), or no longer valid) and stops
// writing at once. Each leadership is written as a won_record when campaign() returns, each
// write as it is made, an "ending" mark before the resignation (or abandonment), and a
// lead_record once it has ended: the records of a candidate SIGKILLed while it leads say who
// led, with which term, until when at least.
//
// Final mode (an 'f' on its standard input, once the faults are healed): a leader no longer
// steps down of its own accord and proclaims every 200 ms, so that an observer that missed a
// message during the faults hears of the final leader by the next one.
//
//   redlock_torture_candidate --config FILE --id N --out FILE --seed S --election NAME
//
// Exit status: 0 after a clean stop; 2 for bad usage; 3 when the client cannot be made.

#include "election_record.hpp"
#include "record.hpp"

#include <redlock/redlock.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using redlock_torture::lead_end;
using redlock_torture::monotonic_ns;

struct arguments {
    std::string config;
    std::string out;
    std::string election;
    int id = 0;
    std::uint64_t seed = 0;
};

auto parse(int argc, char** argv, arguments& args) -> bool {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view flag = argv[i];
        const char* value = argv[i + 1];
        if (flag == "--config") {
            args.config = value;
        } else if (flag == "--out") {
            args.out = value;
        } else if (flag == "--election") {
            args.election = value;
        } else if (flag == "--id") {
            args.id = std::atoi(value);
        } else if (flag == "--seed") {
            args.seed = std::strtoull(value, nullptr, 10);
        } else {
            return false;
        }
    }
    return argc % 2 == 1 && !args.config.empty() && !args.out.empty() && !args.election.empty();
}

auto errc_name(redlock::errc e) -> std::string {
    switch (e) {
        case redlock::errc::contended:
            return "contended";
        case redlock::errc::quorum_unreachable:
            return "quorum_unreachable";
        case redlock::errc::validity_expired:
            return "validity_expired";
        case redlock::errc::not_held:
            return "not_held";
        case redlock::errc::cancelled:
            return "cancelled";
        case redlock::errc::client_stopped:
            return "client_stopped";
        default:
            return "other_error";
    }
}

auto ns_of(std::chrono::steady_clock::time_point t) -> std::int64_t {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// Sleeps `d`, or less if `stop` or `also` is requested meanwhile (checked every 1 ms: a leader
/// must stop writing promptly once its leadership is lost).
void nap(std::chrono::nanoseconds d, const std::stop_token& stop,
         const std::stop_token& also = {}) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (!stop.stop_requested() && !also.stop_requested()) {
        const auto left = until - std::chrono::steady_clock::now();
        if (left <= 0ns) return;
        std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(left, 1ms));
    }
}

class candidate {
public:
    candidate(const arguments& args, std::FILE* out, const std::atomic<bool>& final_mode)
        : args_{args}, out_{out}, final_{final_mode}, rng_{args.seed} {
        static constexpr const char* keys[] = {"campaigns",
                                               "won",
                                               "contended",
                                               "quorum_unreachable",
                                               "validity_expired",
                                               "not_held",
                                               "cancelled",
                                               "client_stopped",
                                               "other_error",
                                               "never_valid",
                                               "resigned",
                                               "abandoned",
                                               "lost",
                                               "stopped",
                                               "resign_failures",
                                               "proclaims",
                                               "proclaim_failures",
                                               "final_proclaims",
                                               "writes",
                                               "late_writes",
                                               "late_after_newer",
                                               "clients",
                                               "longest_lost_reaction_us"};
        for (const char* key : keys) {
            counts_[key] = 0;
        }
    }

    /// Campaigns, leads and steps down until `stop`; false when no client could be made.
    auto run(const std::stop_token& stop) -> bool {
        while (!stop.stop_requested()) {
            if (!locks_ && !make_client()) return false;
            serve(stop);
        }
        return true;
    }

    void write_summary() {
        redlock_torture::worker_summary summary;
        summary.worker = args_.id;
        summary.counts = counts_;
        line(summary.format());
    }

private:
    auto uniform(std::int64_t lo, std::int64_t hi) -> std::int64_t {
        return std::uniform_int_distribution<std::int64_t>{lo, hi}(rng_);
    }

    void line(const std::string& text) {
        std::fputs(text.c_str(), out_);
        std::fputc('\n', out_);
        std::fflush(out_);
    }

    auto make_client() -> bool {
        auto config = redlock::load_config(args_.config);
        if (!config) {
            std::fprintf(stderr, "candidate %d: %s\n", args_.id, config.error().what().c_str());
            return false;
        }
        const int id = args_.id;
        config->logger = [id](redlock::log_level, std::string_view text) {
            std::fprintf(stderr, "%lld candidate %d: %.*s\n",
                         static_cast<long long>(monotonic_ns()), id, static_cast<int>(text.size()),
                         text.data());
        };
        auto made = redlock::client::create(std::move(*config));
        if (!made) {
            std::fprintf(stderr, "candidate %d: %s\n", args_.id, made.error().message.c_str());
            return false;
        }
        locks_.emplace(std::move(*made));
        ++counts_["clients"];
        return true;
    }

    /// One campaign and, if it is won, one term of office.
    void serve(const std::stop_token& stop) {
        constexpr int ttls[] = {500, 750, 1000};
        const int ttl = ttls[uniform(0, 2)];
        auto lost_at = std::make_shared<std::atomic<std::int64_t>>(0);
        redlock::campaign_options options;
        options.ttl = std::chrono::milliseconds{ttl};
        options.max_wait = std::chrono::milliseconds{uniform(500, 3000)};
        options.on_lost = [lost_at](const redlock::leadership&, const redlock::error&) {
            lost_at->store(monotonic_ns());
        };
        redlock_torture::lead_record r;
        r.worker = args_.id;
        r.election = args_.election;
        r.ttl_ms = ttl;
        r.called_ns = monotonic_ns();
        ++counts_["campaigns"];
        // Every attempt of the campaign writes its proposal with the fencing confirm: one the
        // campaign then gives up (its validity spent by a pause, say) may have reached a
        // majority unheard, and an observer may see it in between.
        line(redlock_torture::mark_record{args_.id, 0, r.called_ns}.format("campaign"));
        auto won = locks_->campaign(args_.election, "candidate-" + std::to_string(args_.id),
                                    options, stop);
        if (!won) {
            const auto code = static_cast<redlock::errc>(won.error().code.value());
            ++counts_[errc_name(code)];
            nap(std::chrono::milliseconds{uniform(0, 20)}, stop);
            return;
        }
        r.start_ns = monotonic_ns();
        r.valid_at_start = won->valid();
        r.until_start_ns = ns_of(won->held().valid_until());
        r.term = won->term();
        ++counts_["won"];
        if (!r.valid_at_start) ++counts_["never_valid"];
        line(redlock_torture::won_record{args_.id, r.term, r.called_ns, r.start_ns,
                                         r.until_start_ns, r.valid_at_start, ttl}
                 .format());

        // The term of office: writes every 5-40 ms while valid, a proclamation now and then
        // (every 200 ms in final mode, which also keeps it in office until told to stop).
        bool abandon = uniform(0, 3) == 0;
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::milliseconds{uniform(100, 3000)};
        const std::stop_token lost = won->lost_token();
        bool fell = false;
        std::int64_t last_final_proclaim = 0;
        std::size_t writes = 0;
        while (!stop.stop_requested() &&
               (final_.load() || std::chrono::steady_clock::now() < deadline)) {
            const std::int64_t at = monotonic_ns();  // before valid(): `at` precedes the check
            if (!won->valid()) {
                fell = true;
                break;
            }
            ++writes;
            line(redlock_torture::write_record{args_.id, r.term, at, false,
                                               ns_of(won->held().valid_until())}
                     .format());
            const bool final_due = final_.load() && at - last_final_proclaim >= 200'000'000;
            if (uniform(0, 19) == 0 || final_due) {
                ++counts_[final_due ? "final_proclaims" : "proclaims"];
                if (final_due) last_final_proclaim = at;
                if (!won->proclaim("candidate-" + std::to_string(args_.id) + " at " +
                                   std::to_string(at))) {
                    ++counts_["proclaim_failures"];
                }
            }
            nap(std::chrono::milliseconds{uniform(5, 40)}, stop, lost);
        }
        abandon = abandon && !final_.load();
        r.end_ns = monotonic_ns();
        line(redlock_torture::mark_record{args_.id, r.term, r.end_ns}.format("ending"));
        r.valid_at_end = won->valid();
        r.until_end_ns = ns_of(won->held().valid_until());
        r.lost = won->lost();
        r.lost_at_ns = lost_at->load();
        r.writes = static_cast<int>(writes);
        fell = fell || r.lost;
        if (r.lost_at_ns != 0) {
            auto& longest = counts_["longest_lost_reaction_us"];
            longest = std::max<std::uint64_t>(
                longest,
                static_cast<std::uint64_t>(std::max<std::int64_t>(r.end_ns - r.lost_at_ns, 0)) /
                    1000);
        }
        counts_["writes"] += writes;
        r.how = fell                    ? lead_end::lost
                : stop.stop_requested() ? lead_end::stopped
                : abandon               ? lead_end::abandoned
                                        : lead_end::resigned;
        ++counts_[redlock_torture::lead_end_name(r.how)];
        if (r.how != lead_end::abandoned) {
            const auto resigned = won->resign();
            r.resign_ok = resigned ? 1 : 0;
            if (!resigned) ++counts_["resign_failures"];
        }
        line(r.format());
        if (r.how == lead_end::abandoned) late_write(r, stop);
    }

    /// The client goes (its renewals with it). Later, on a new client, one write with the old
    /// term: one time in three soon (most often before the lock has expired and anyone else
    /// leads), otherwise once the quorum names a newer term (up to 6 s), and a little after,
    /// so that the new leader has most likely written already.
    void late_write(const redlock_torture::lead_record& r, const std::stop_token& stop) {
        locks_.reset();
        if (!make_client()) return;
        if (uniform(0, 2) == 0) {
            nap(std::chrono::milliseconds{uniform(0, r.ttl_ms)}, stop);
        } else {
            const auto give_up = std::chrono::steady_clock::now() + 6s;
            while (!stop.stop_requested() && std::chrono::steady_clock::now() < give_up) {
                const auto view = locks_->leader(args_.election);
                if (view && view->leader && view->leader->term > r.term) {
                    ++counts_["late_after_newer"];
                    break;
                }
                nap(std::chrono::milliseconds{uniform(20, 100)}, stop);
            }
            nap(std::chrono::milliseconds{uniform(10, 100)}, stop);
        }
        if (stop.stop_requested()) return;
        line(redlock_torture::write_record{args_.id, r.term, monotonic_ns(), true, 0}.format());
        ++counts_["late_writes"];
    }

    const arguments& args_;
    std::FILE* out_;
    const std::atomic<bool>& final_;
    std::mt19937_64 rng_;
    std::optional<redlock::client> locks_;
    std::map<std::string, std::uint64_t> counts_;
};

}  // namespace

auto main(int argc, char** argv) -> int {
    arguments args;
    if (!parse(argc, argv, args)) {
        std::fprintf(stderr, "usage: %s --config FILE --id N --out FILE --seed S --election NAME\n",
                     argv[0]);
        return 2;
    }
    std::FILE* out = std::fopen(args.out.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "candidate %d: cannot write %s: %s\n", args.id, args.out.c_str(),
                     std::strerror(errno));
        return 3;
    }
    std::stop_source stop;
    std::atomic<bool> final_mode{false};
    // The orchestrator stops us by closing our standard input (or by dying); an 'f' on it
    // turns final mode on.
    std::thread watcher{[&stop, &final_mode] {
        char buffer[64];
        for (ssize_t n; (n = ::read(0, buffer, sizeof buffer)) > 0;) {
            if (std::memchr(buffer, 'f', static_cast<std::size_t>(n)) != nullptr)
                final_mode.store(true);
        }
        stop.request_stop();
    }};
    candidate c{args, out, final_mode};
    const bool ran = c.run(stop.get_token());
    c.write_summary();
    std::fclose(out);
    if (!ran) {
        stop.request_stop();
        watcher.detach();
        return 3;
    }
    watcher.join();
    return 0;
}
