// Checks bench/histogram.hpp against exact percentiles of known samples.
// Registered with CTest (label "bench"); prints what differs and fails.
#include "histogram.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

int failures = 0;

void expect_near(const char* what, std::uint64_t got, std::uint64_t exact) {
    // The histogram reports a bucket's highest value: never below the exact
    // value, and above it by less than one bucket (1/128 of the value).
    const bool ok = got >= exact && got - exact <= exact / redlock::bench::histogram::sub_count;
    if (!ok) {
        std::printf("FAIL %s: got %llu, exact %llu\n", what, static_cast<unsigned long long>(got),
                    static_cast<unsigned long long>(exact));
        ++failures;
    }
}

auto exact_percentile(std::vector<std::uint64_t> v, double q) -> std::uint64_t {
    std::sort(v.begin(), v.end());
    auto rank = static_cast<std::size_t>(q * static_cast<double>(v.size()) + 0.5);
    rank = std::clamp<std::size_t>(rank, 1, v.size());
    return v[rank - 1];
}

void check(const char* name, const std::vector<std::uint64_t>& samples) {
    static redlock::bench::histogram h;
    h.reset();
    for (const auto s : samples) h.record(s);
    for (const double q : {0.5, 0.9, 0.99, 0.999}) {
        char what[64];
        std::snprintf(what, sizeof what, "%s p%g", name, q * 100);
        expect_near(what, h.percentile(q), exact_percentile(samples, q));
    }
    if (h.max() != *std::max_element(samples.begin(), samples.end())) {
        std::printf("FAIL %s: max\n", name);
        ++failures;
    }
    if (h.count() != samples.size()) {
        std::printf("FAIL %s: count\n", name);
        ++failures;
    }
}

}  // namespace

int main() {
    std::mt19937_64 rng{42};
    std::vector<std::uint64_t> small;
    for (std::uint64_t i = 0; i < 1000; ++i) small.push_back(i);
    check("linear 0..999", small);

    std::lognormal_distribution<double> latency{12.0, 1.0};  // around 160 µs in ns
    std::vector<std::uint64_t> lognormal;
    for (int i = 0; i < 200'000; ++i)
        lognormal.push_back(static_cast<std::uint64_t>(latency(rng)) + 1);
    check("lognormal", lognormal);

    std::vector<std::uint64_t> wide;
    std::uniform_int_distribution<std::uint64_t> any{1, std::uint64_t{1} << 39};
    for (int i = 0; i < 50'000; ++i) wide.push_back(any(rng));
    check("uniform up to 2^39", wide);

    redlock::bench::histogram a;
    redlock::bench::histogram b;
    a.record(10);
    b.record(1'000'000);
    a.merge(b);
    if (a.count() != 2 || a.max() != 1'000'000 || a.min() != 10) {
        std::printf("FAIL merge\n");
        ++failures;
    }
    if (failures == 0) std::printf("histogram: all checks passed\n");
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
