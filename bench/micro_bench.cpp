// Micro benchmarks of the library's pure pieces. The load generator and the
// raw-Redis ceiling come with the benchmark issue.
#include "detail/quorum_tally.hpp"
#include "detail/random.hpp"
#include "detail/timing.hpp"

#include <benchmark/benchmark.h>

namespace {

using namespace std::chrono_literals;

void validity_arithmetic(benchmark::State& state) {
    std::chrono::nanoseconds elapsed{1'234'567};
    for (auto _ : state) {
        benchmark::DoNotOptimize(elapsed);
        benchmark::DoNotOptimize(redlock::detail::validity(10'000ms, elapsed, 0.01, 2ms));
    }
}
BENCHMARK(validity_arithmetic);

void quorum_decision_of_five(benchmark::State& state) {
    for (auto _ : state) {
        redlock::detail::quorum_tally tally{5};
        tally.yes();
        tally.refused();
        tally.yes();
        benchmark::DoNotOptimize(tally.yes());
    }
}
BENCHMARK(quorum_decision_of_five);

void lock_value_generation(benchmark::State& state) {
    redlock::detail::random_source rng;
    for (auto _ : state) benchmark::DoNotOptimize(rng.lock_value());
}
BENCHMARK(lock_value_generation);

}  // namespace
