#include "load/figures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sys/resource.h>
#include <unistd.h>

namespace redlock::bench {

auto cpu_now() -> double {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto secs = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return secs(u.ru_utime) + secs(u.ru_stime);
}

auto load_average() -> double {
    double one = 0;
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf", &one) != 1) one = 0;
        std::fclose(f);
    }
    return one;
}

auto max_rss_kib() -> long {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

auto rss_kib() -> long {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0;
    long pages = 0;
    long resident = 0;
    const int got = std::fscanf(f, "%ld %ld", &pages, &resident);
    std::fclose(f);
    return got == 2 ? resident * (sysconf(_SC_PAGESIZE) / 1024) : 0;
}

auto utc_now() -> std::string {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char buf[32];
    return std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &utc) > 0 ? buf : "?";
}

auto median(std::vector<double> v) -> double {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

auto jain_index(const std::vector<std::uint64_t>& x) -> double {
    double sum = 0;
    double squares = 0;
    for (const std::uint64_t v : x) {
        const auto d = static_cast<double>(v);
        sum += d;
        squares += d * d;
    }
    return squares > 0 ? sum * sum / (static_cast<double>(x.size()) * squares) : 0.0;
}

auto handoff_gaps_of(std::vector<hold_span> holds) -> handoff_gaps {
    std::sort(holds.begin(), holds.end(),
              [](const hold_span& a, const hold_span& b) { return a.granted < b.granted; });
    handoff_gaps out;
    for (const hold_span& h : holds) out.held.push_back(nanos_between(h.granted, h.releasing));
    for (std::size_t i = 1; i < holds.size(); ++i) {
        if (holds[i].granted > holds[i - 1].releasing) {
            out.nanos.push_back(nanos_between(holds[i - 1].releasing, holds[i].granted));
        } else {
            ++out.overlaps;
        }
    }
    return out;
}

auto latency_json(const histogram& h) -> nlohmann::ordered_json {
    return nlohmann::ordered_json{{"count", h.count()},
                                  {"p50", h.percentile(0.50)},
                                  {"p90", h.percentile(0.90)},
                                  {"p99", h.percentile(0.99)},
                                  {"p999", h.percentile(0.999)},
                                  {"max", h.max()},
                                  {"mean", std::llround(h.mean())}};
}

}  // namespace redlock::bench
