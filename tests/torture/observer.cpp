// A torture observer: one process that follows one election with client::observe through the
// public API until its standard input closes, and writes every change it is told as a
// seen_record (observer_checker.hpp), stamped on CLOCK_MONOTONIC when the callback ran.
//
//   redlock_torture_observer --config FILE --id N --out FILE --election NAME
//
// Exit status: 0 after a clean stop; 2 for bad usage; 3 when the client or the observation
// cannot be made.

#include "observer_checker.hpp"
#include "record.hpp"

#include <redlock/redlock.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

struct arguments {
    std::string config;
    std::string out;
    std::string election;
    int id = 0;
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
        } else {
            return false;
        }
    }
    return argc % 2 == 1 && !args.config.empty() && !args.out.empty() && !args.election.empty();
}

}  // namespace

auto main(int argc, char** argv) -> int {
    arguments args;
    if (!parse(argc, argv, args)) {
        std::fprintf(stderr, "usage: %s --config FILE --id N --out FILE --election NAME\n",
                     argv[0]);
        return 2;
    }
    std::FILE* out = std::fopen(args.out.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "observer %d: cannot write %s: %s\n", args.id, args.out.c_str(),
                     std::strerror(errno));
        return 3;
    }
    auto config = redlock::load_config(args.config);
    if (!config) {
        std::fprintf(stderr, "observer %d: %s\n", args.id, config.error().what().c_str());
        return 3;
    }
    const int id = args.id;
    config->logger = [id](redlock::log_level, std::string_view text) {
        std::fprintf(stderr, "%lld observer %d: %.*s\n",
                     static_cast<long long>(redlock_torture::monotonic_ns()), id,
                     static_cast<int>(text.size()), text.data());
    };
    auto made = redlock::client::create(std::move(*config));
    if (!made) {
        std::fprintf(stderr, "observer %d: %s\n", id, made.error().message.c_str());
        return 3;
    }
    redlock::client client = std::move(*made);
    std::mutex mutex;
    std::uint64_t reports = 0;
    std::uint64_t leaders = 0;
    auto observing = client.observe(args.election, [&](const redlock::election_view& view) {
        redlock_torture::seen_record s;
        s.observer = id;
        s.at_ns = redlock_torture::monotonic_ns();
        s.leader = view.leader.has_value();
        if (view.leader) {
            s.term = view.leader->term;
            s.from = redlock_torture::candidate_of(view.leader->value);
            s.proclaimed = view.leader->proclaimed;
        }
        s.highest = view.highest_term;
        s.agreeing = view.agreeing;
        s.answered = view.answered;
        const std::lock_guard hold{mutex};
        ++reports;
        leaders += s.leader ? 1 : 0;
        std::fputs((s.format() + "\n").c_str(), out);
        std::fflush(out);
    });
    if (!observing) {
        std::fprintf(stderr, "observer %d: %s\n", id, observing.error().message.c_str());
        return 3;
    }
    // The orchestrator stops us by closing our standard input (or by dying).
    char buffer[64];
    while (::read(0, buffer, sizeof buffer) > 0) {
    }
    observing->stop();  // no callback runs once this returns
    const auto stats = client.stats();
    redlock_torture::worker_summary summary;
    summary.worker = id;
    summary.counts = {
        {"reports", reports}, {"leader_reports", leaders}, {"connects", stats.connects}};
    std::fputs((summary.format() + "\n").c_str(), out);
    std::fclose(out);
    return 0;
}
