// A torture worker: one process, one redlock client, contending for a few resources
// through the public API until its standard input closes. Every critical section is
// written to the output file as a hold_record (see record.hpp) as soon as it ends.
//
//   redlock_torture_worker --config FILE --id N --out FILE --seed S --resources a,b,c
//                          [--kinds x,rw,2,re,s] [--threads T] [--clients C] [--permit-hold-ms M]
//                          [--wait-modes targeted,broadcast,fair] [--sigpipe ignore|default]
//
// --kinds says how each resource (in the same order) is used: "x" a plain lock (every
// holder exclusive, the default), "rw" a read-write lock (two readers to one writer), a
// number K a counting semaphore of K permits, "re" a reentrant lock (lock_options::owner, one
// owner per thread: re-entered once or twice in each critical section), "s" a lock in a
// session (lock_options::session: the session of the thread's client, worker_kinds.hpp). A
// read-write lock's readers and writers ask for fencing tokens, and so does a reentrant lock
// (each re-entry must give back the same token); a plain lock and a session's lock never do,
// so that they can be handed over (a release passes an exclusive lock straight to the first
// waiter, of any client, that has no token); a permit cannot have one.
//
// --threads T (default 1): T threads share the one client, each running the same loop
// with a random generator of its own (from the seed and the thread's index). Their records
// name the thread; one summary is written for the process, with the client's counters
// (hand-offs among them) once every thread has stopped.
//
// --clients C (default 1): C clients of the same configuration in the process, thread t
// using client t % C. Threads of one client send on the same connections, so their grants
// reach every node in one order; threads of different clients race, and the nodes see
// them in different orders (a semaphore's permits then split between them, node by node).
//
// --permit-hold-ms M: a permit is held 0 to M ms, never extended by hand (without it, as
// long as any other hold: up to 2.5 TTLs). Short holds free permits often, so that the
// waiters are woken, race and lose attempts often (issue 36: a lost waiting attempt that
// heard late answers was granted a permit no majority held).
//
// --wait-modes m1,m2: each acquisition waits in one of these modes, drawn at random
// (targeted, fair, broadcast, poll); without it, in the client's default mode. Broadcast
// wakes every waiter at a release: a herd, whose attempts race on every node at once.
//
// SIGPIPE keeps its default disposition by default, as in an application that does not
// know better: the library must not let a write to a closed connection kill the process
// (its owned loop thread blocks SIGPIPE; sigpipe_test.cpp). `--sigpipe ignore` ignores
// it, as the redlock CLI does (cli/main.cpp).
//
// Exit status: 0 after a clean stop; 2 for bad usage; 3 when a client cannot be made.

#include "record.hpp"
#include "worker_kinds.hpp"

#include <redlock/redlock.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using redlock_torture::count_map;
using redlock_torture::hold_kind;
using redlock_torture::hold_via;
using redlock_torture::monotonic_ns;
using redlock_torture::nap;

/// How a resource is used: a plain lock, a read-write lock, a semaphore of `permits`, a
/// reentrant lock, or a lock in a session.
struct resource_use {
    bool readers = false;
    int permits = 0;
    hold_via via = hold_via::plain;
};

struct arguments {
    std::string config;
    std::string out;
    int id = 0;
    std::uint64_t seed = 0;
    std::vector<std::string> resources;
    std::vector<resource_use> uses;  ///< one per resource
    int threads = 1;
    int clients = 1;
    int permit_hold_ms = -1;                     ///< -1: permits held as long as any other hold
    std::vector<redlock::wait_mode> wait_modes;  ///< empty: the client's default
    bool ignore_sigpipe = false;
};

auto split(std::string_view text, char sep) -> std::vector<std::string> {
    std::vector<std::string> parts;
    while (!text.empty()) {
        const auto at = text.find(sep);
        if (at != 0) parts.emplace_back(text.substr(0, at));
        if (at == std::string_view::npos) break;
        text.remove_prefix(at + 1);
    }
    return parts;
}

/// "x", "rw", "re", "s", or K in 1..max_permits.
auto parse_use(const std::string& text, resource_use& use) -> bool {
    if (text == "x") return true;
    if (text == "rw") {
        use.readers = true;
        return true;
    }
    if (text == "re" || text == "s") {
        use.via = text == "re" ? hold_via::reentrant : hold_via::session;
        return true;
    }
    char* end = nullptr;
    const long k = std::strtol(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || k < 1 || k > redlock::max_permits) return false;
    use.permits = static_cast<int>(k);
    return true;
}

auto parse_wait_mode(const std::string& text, redlock::wait_mode& mode) -> bool {
    static constexpr std::pair<std::string_view, redlock::wait_mode> modes[] = {
        {"targeted", redlock::wait_mode::targeted},
        {"fair", redlock::wait_mode::fair},
        {"broadcast", redlock::wait_mode::broadcast},
        {"poll", redlock::wait_mode::poll}};
    for (const auto& [name, value] : modes) {
        if (text == name) {
            mode = value;
            return true;
        }
    }
    return false;
}

auto parse(int argc, char** argv, arguments& args) -> bool {
    std::vector<std::string> kinds;
    std::vector<std::string> modes;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view flag = argv[i];
        const char* value = argv[i + 1];
        if (flag == "--config") {
            args.config = value;
        } else if (flag == "--out") {
            args.out = value;
        } else if (flag == "--id") {
            args.id = std::atoi(value);
        } else if (flag == "--seed") {
            args.seed = std::strtoull(value, nullptr, 10);
        } else if (flag == "--resources") {
            args.resources = split(value, ',');
        } else if (flag == "--threads") {
            args.threads = std::atoi(value);
        } else if (flag == "--clients") {
            args.clients = std::atoi(value);
        } else if (flag == "--permit-hold-ms") {
            args.permit_hold_ms = std::atoi(value);
        } else if (flag == "--wait-modes") {
            modes = split(value, ',');
        } else if (flag == "--kinds") {
            kinds = split(value, ',');
        } else if (flag == "--sigpipe" &&
                   (std::string_view{value} == "ignore" || std::string_view{value} == "default")) {
            args.ignore_sigpipe = std::string_view{value} == "ignore";
        } else {
            return false;
        }
    }
    if (argc % 2 == 0 || args.config.empty() || args.out.empty() || args.resources.empty() ||
        args.threads < 1 || args.threads > 64 || args.clients < 1 || args.clients > args.threads ||
        args.permit_hold_ms < -1)
        return false;
    for (const auto& m : modes) {
        if (!parse_wait_mode(m, args.wait_modes.emplace_back())) return false;
    }
    if (kinds.empty()) kinds.assign(args.resources.size(), "x");
    if (kinds.size() != args.resources.size()) return false;
    args.uses.resize(kinds.size());
    for (std::size_t i = 0; i < kinds.size(); ++i) {
        if (!parse_use(kinds[i], args.uses[i])) return false;
    }
    return true;
}

auto errc_name(redlock::errc e) -> std::string {
    switch (e) {
        case redlock::errc::contended:
            return "contended";
        case redlock::errc::quorum_unreachable:
            return "quorum_unreachable";
        case redlock::errc::validity_expired:
            return "validity_expired";
        case redlock::errc::cancelled:
            return "cancelled";
        case redlock::errc::client_stopped:
            return "client_stopped";
        case redlock::errc::invalid_argument:
            return "invalid_argument";
        default:
            return "other_error";
    }
}

/// What the threads share: the clients, their sessions, the arguments, the output file and
/// the stop.
struct shared {
    std::vector<redlock::client>& clients;
    std::deque<redlock_torture::session_slot>& sessions;  ///< one per client
    const arguments& args;
    std::FILE* out;
    std::mutex out_mutex;  ///< one record line at a time, flushed whole
    std::stop_source stop;

    void write(const std::string& line) {
        const std::lock_guard hold{out_mutex};
        std::fputs(line.c_str(), out);
        std::fputc('\n', out);
        std::fflush(out);
    }
};

/// One thread's loop, until a stop is requested; its counts go to `counts`.
void contend(shared& s, int thread, count_map& counts) {
    const arguments& args = s.args;
    const auto client_index = static_cast<std::size_t>(thread % args.clients);
    redlock::client& locks = s.clients[client_index];
    redlock_torture::session_slot& sessions = s.sessions[client_index];
    const std::stop_token stop = s.stop.get_token();
    std::seed_seq seeds{static_cast<std::uint32_t>(args.seed),
                        static_cast<std::uint32_t>(args.seed >> 32U),
                        static_cast<std::uint32_t>(thread)};
    std::mt19937_64 rng{seeds};
    auto uniform = [&rng](std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>{lo, hi}(rng);
    };
    constexpr int ttls[] = {300, 500, 750, 1000};
    // The owner of this thread's reentrant locks: its own, so that the other threads of its
    // client contend with it as another client would.
    const std::string owner =
        "worker-" + std::to_string(args.id) + "-thread-" + std::to_string(thread);
    auto write = [&s](const std::string& line) { s.write(line); };

    while (!stop.stop_requested()) {
        const auto which = static_cast<std::size_t>(uniform(0, std::ssize(args.resources) - 1));
        const std::string& resource = args.resources[which];
        const resource_use use = args.uses[which];
        // Two readers to one writer: readers then often hold together, and writers
        // still come often enough to meet them.
        const auto kind = use.permits > 0                     ? hold_kind::permit
                          : use.readers && uniform(0, 2) != 0 ? hold_kind::reader
                                                              : hold_kind::writer;
        // A plain lock goes without a token: only then can a release by another thread of
        // this client hand it over. A read-write lock's writers and readers always ask for
        // one, so that its tokens are raised often: with 3 writers in 4 unfenced, a token
        // confirmed on a majority that included both in-memory nodes outlived the other
        // copies, those nodes restarted empty, and readers read the token before it
        // (README, "Where tokens come from": a documented limit without persistence).
        // A reentrant lock always asks for one (a re-entry must give back the same token), a
        // session's lock never does (it can then be handed over into its session). A permit
        // cannot have one.
        const bool fenced = use.readers || use.via == hold_via::reentrant;
        int ttl = ttls[uniform(0, 3)];
        bool renew = uniform(0, 1) == 1;
        // A lock in a session takes the session's TTL and its renewals: the session, opened
        // with this TTL when the client's threads have none open.
        std::shared_ptr<redlock_torture::open_session> in;
        if (use.via == hold_via::session) {
            in = sessions.take(ttl, counts);
            if (!in) {
                nap(20ms, stop);
                continue;
            }
            ttl = static_cast<int>(in->handle.ttl().count());
            renew = true;
        }
        auto lost_at = std::make_shared<std::atomic<std::int64_t>>(0);

        redlock::lock_options options;
        options.fencing = fenced;
        if (kind == hold_kind::reader) options.shared = true;
        if (kind == hold_kind::permit) options.permits = use.permits;
        // Mostly short waits; some long enough to span a recycled connection.
        options.max_wait = std::chrono::milliseconds{uniform(0, 3) == 0 ? uniform(1500, 5000)
                                                                        : uniform(100, 1500)};
        if (!args.wait_modes.empty()) {
            options.wait = args.wait_modes[static_cast<std::size_t>(
                uniform(0, std::ssize(args.wait_modes) - 1))];
        }
        if (in) {
            options.session = in->handle;
        } else {
            options.ttl = std::chrono::milliseconds{ttl};
            options.auto_renew = renew;
        }
        if (use.via == hold_via::reentrant) options.owner = owner;
        options.on_lost = [lost_at](const redlock::lock&, const redlock::error&) {
            lost_at->store(monotonic_ns());
        };

        redlock_torture::hold_record r;
        r.worker = args.id;
        r.thread = thread;
        r.resource = resource;
        r.via = use.via;
        if (in) r.session = in->handle.id();
        r.ttl_ms = ttl;
        r.auto_renew = renew;
        r.called_ns = monotonic_ns();
        auto held = locks.acquire(resource, options, stop);
        ++counts["attempts"];
        if (!held) {
            const auto why = static_cast<redlock::errc>(held.error().code.value());
            // A session lost (or closed) meanwhile takes no more locks: refused, as it must.
            if (in && why == redlock::errc::invalid_argument && in->handle.closed())
                ++counts["session_refused"];
            else
                ++counts[errc_name(why)];
            if (in) sessions.give_back(in);
            continue;
        }
        redlock_torture::record_start(r, *held);
        if (r.kind != kind) ++counts["kind_mismatch"];
        if (r.fenced != fenced) ++counts["fencing_mismatch"];
        ++counts["granted"];
        if (kind == hold_kind::writer && !fenced) ++counts["granted_unfenced"];
        if (!r.valid_at_start) ++counts["never_valid"];

        // The critical section: short, or past the TTL (auto-renewal must then carry
        // it, and without renewal the validity ends before the section does).
        const bool short_hold = kind == hold_kind::permit && args.permit_hold_ms >= 0;
        const std::int64_t hold_ms = short_hold ? uniform(0, args.permit_hold_ms)
                                     : renew    ? uniform(0, ttl * 5 / 2)
                                                : uniform(0, ttl * 6 / 5);
        if (use.via == hold_via::reentrant) {
            const auto plan = redlock_torture::draw_reentrant_plan(uniform, hold_ms, ttl, renew);
            redlock_torture::reentrant_section(locks, resource, options, *held, r, plan, stop,
                                               counts, write);
        } else if (!short_hold && !renew && uniform(0, 3) == 0) {
            nap(std::chrono::milliseconds{hold_ms / 2}, stop);
            if (auto extended = locks.extend(*held, std::chrono::milliseconds{ttl})) {
                ++r.extends;
                ++counts["extends"];
            } else {
                ++counts["extend_failures"];
            }
            nap(std::chrono::milliseconds{hold_ms - hold_ms / 2}, stop);
        } else {
            nap(std::chrono::milliseconds{hold_ms}, stop);
        }

        redlock_torture::record_end(r, *held);
        r.lost_at_ns = lost_at->load();
        // A lock lost with its session is told by the session's on_lost.
        if (in && r.lost && r.lost_at_ns == 0) r.lost_at_ns = in->lost_at->load();
        if (!r.valid_at_end) ++counts["invalid_at_end"];
        if (r.lost) ++counts["lost"];
        if (in) {
            // One time in four its only user closes the session: the close releases the lock.
            sessions.release(r, locks, *held, in, uniform(0, 3) == 0, counts);
        } else {
            redlock_torture::release_into(r, locks, *held, counts);
        }
        s.write(r.format());
        nap(std::chrono::milliseconds{uniform(0, 20)}, stop);
    }
}

}  // namespace

auto main(int argc, char** argv) -> int {
    arguments args;
    if (!parse(argc, argv, args)) {
        std::fprintf(stderr,
                     "usage: %s --config FILE --id N --out FILE --seed S --resources a,b,c "
                     "[--kinds x,rw,K,re,s] [--threads T] [--clients C] [--permit-hold-ms M] "
                     "[--wait-modes m1,m2] [--sigpipe ignore|default]\n",
                     argv[0]);
        return 2;
    }
    if (args.ignore_sigpipe) std::signal(SIGPIPE, SIG_IGN);
    auto config = redlock::load_config(args.config);
    if (!config) {
        std::fprintf(stderr, "worker %d: %s\n", args.id, config.error().what().c_str());
        return 3;
    }
    // Warnings go to stderr (the worker's log file), stamped on the shared clock so
    // that they line up with the records and the fault log.
    const int id = args.id;
    config->logger = [id](redlock::log_level, std::string_view text) {
        std::fprintf(stderr, "%lld worker %d: %.*s\n", static_cast<long long>(monotonic_ns()), id,
                     static_cast<int>(text.size()), text.data());
    };
    std::vector<redlock::client> clients;
    for (int c = 0; c < args.clients; ++c) {
        auto made = redlock::client::create(*config);
        if (!made) {
            std::fprintf(stderr, "worker %d: %s\n", args.id, made.error().message.c_str());
            return 3;
        }
        clients.push_back(std::move(*made));
    }
    std::FILE* out = std::fopen(args.out.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "worker %d: cannot write %s: %s\n", args.id, args.out.c_str(),
                     std::strerror(errno));
        return 3;
    }
    std::deque<redlock_torture::session_slot> sessions;
    for (auto& c : clients) sessions.emplace_back(c);
    shared s{clients, sessions, args, out, {}, {}};

    // The orchestrator stops us by closing our standard input (or by dying).
    std::thread watcher{[&s] {
        char buffer[64];
        while (::read(0, buffer, sizeof buffer) > 0) {
        }
        s.stop.request_stop();
    }};

    redlock_torture::worker_summary summary;
    summary.worker = args.id;
    auto& counts = summary.counts;
    for (const char* key :
         {"attempts", "granted", "granted_unfenced", "contended", "quorum_unreachable",
          "validity_expired", "cancelled", "client_stopped", "other_error", "never_valid",
          "invalid_at_end", "lost", "extends", "extend_failures", "release_failures",
          "released_on_majority", "kind_mismatch", "fencing_mismatch", "invalid_argument"}) {
        counts[key] = 0;
    }
    for (const char* key : redlock_torture::reentrant_and_session_counts) counts[key] = 0;
    std::vector<count_map> per_thread(static_cast<std::size_t>(args.threads));
    {
        std::vector<std::jthread> threads;
        for (int t = 0; t < args.threads; ++t) {
            threads.emplace_back(
                [&s, &per_thread, t] { contend(s, t, per_thread[static_cast<std::size_t>(t)]); });
        }
    }  // every thread has stopped, and released what it held
    for (const auto& thread_counts : per_thread) {
        for (const auto& [key, n] : thread_counts) counts[key] += n;
    }

    counts["threads"] = static_cast<std::uint64_t>(args.threads);
    counts["clients"] = static_cast<std::uint64_t>(args.clients);
    for (const char* key : {"handoffs", "renewals", "locks_lost", "requests", "timeouts",
                            "connects", "node_restarts_seen", "client_attempts"})
        counts[key] = 0;
    for (const auto& c : clients) {
        const auto stats = c.stats();
        counts["handoffs"] += stats.handoffs;
        counts["renewals"] += stats.renewals;
        counts["locks_lost"] += stats.locks_lost;
        counts["requests"] += stats.requests;
        counts["timeouts"] += stats.timeouts;
        counts["connects"] += stats.connects;
        counts["node_restarts_seen"] += stats.node_restarts;
        counts["client_attempts"] += stats.attempts;
    }
    s.write(summary.format());
    std::fclose(out);
    for (auto& c : clients) c.shutdown();
    watcher.join();
    return 0;
}
