// Micro benchmarks of the library's pure pieces, with no server: what one
// lock costs the client in arithmetic, randomness, encoding and parsing.
// Every benchmark also reports heap allocations per operation ("allocs"),
// counted by alloc_counter.cpp: C++ new and C malloc alike (hiredis uses
// malloc).
#include "alloc_counter.hpp"
#include "histogram.hpp"
#include "redlock/config.hpp"
#include "sansio/command.hpp"
#include "sansio/quorum_tally.hpp"
#include "sansio/scripts.hpp"
#include "sansio/timing.hpp"
#include "transport/os_random.hpp"

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

using namespace std::chrono_literals;
using redlock::bench::allocations;

/// Reports allocations per iteration of the benchmark it was made in.
class alloc_meter {
public:
    explicit alloc_meter(benchmark::State& state) : state_{state}, start_{allocations()} {}
    alloc_meter(const alloc_meter&) = delete;
    auto operator=(const alloc_meter&) -> alloc_meter& = delete;
    ~alloc_meter() {
        state_.counters["allocs"] = benchmark::Counter(static_cast<double>(allocations() - start_),
                                                       benchmark::Counter::kAvgIterations);
    }

private:
    benchmark::State& state_;
    std::uint64_t start_;
};

// ---- the algorithm's arithmetic ------------------------------------------------------------

void validity_arithmetic(benchmark::State& state) {
    std::chrono::nanoseconds elapsed{1'234'567};
    const alloc_meter meter{state};
    for (auto _ : state) {
        benchmark::DoNotOptimize(elapsed);
        benchmark::DoNotOptimize(redlock::detail::validity(10'000ms, elapsed, 0.01, 2ms));
    }
}
BENCHMARK(validity_arithmetic);

/// One decision per reply, as acquire_op makes it: five nodes, the verdict
/// after each of the three replies that settle it (yes, refused, yes, yes).
void quorum_decision_per_reply(benchmark::State& state) {
    const alloc_meter meter{state};
    for (auto _ : state) {
        redlock::detail::quorum_tally tally{5};
        benchmark::DoNotOptimize(tally.yes());
        benchmark::DoNotOptimize(tally.refused());
        benchmark::DoNotOptimize(tally.yes());
        benchmark::DoNotOptimize(tally.yes());
    }
    state.SetItemsProcessed(state.iterations() * 4);
}
BENCHMARK(quorum_decision_per_reply);

// ---- the lock value --------------------------------------------------------------------------

void lock_value_generation(benchmark::State& state) {
    redlock::detail::random_source rng;
    const alloc_meter meter{state};
    for (auto _ : state) benchmark::DoNotOptimize(rng.lock_value());
}
BENCHMARK(lock_value_generation);

// ---- command encoding ------------------------------------------------------------------------

constexpr std::string_view key = "redlock:{bench-0042}";
constexpr std::string_view value = "0123456789abcdef0123456789abcdef";

/// One SET NX PX, encoded into a buffer that keeps its capacity (as a
/// connection's output buffer does).
void encode_set(benchmark::State& state) {
    std::string out;
    out.reserve(4096);
    const alloc_meter meter{state};
    for (auto _ : state) {
        out.clear();
        redlock::detail::append_command(out, {"SET", key, value, "NX", "PX", "10000"});
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
}
BENCHMARK(encode_set);

/// The release: EVALSHA <sha> 1 <key> <value>.
void encode_release(benchmark::State& state) {
    const std::string& sha = redlock::detail::release_script().sha;
    std::string out;
    out.reserve(4096);
    const alloc_meter meter{state};
    for (auto _ : state) {
        out.clear();
        redlock::detail::append_command(out, {"EVALSHA", sha, "1", key, value});
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
}
BENCHMARK(encode_release);

/// Not the library's code: the same SET through hiredis's formatter
/// (redisFormatSdsCommandArgv, which the library used until it wrote RESP
/// itself and which the raw ceiling still uses), for comparison.
void encode_set_hiredis_reference(benchmark::State& state) {
    const std::array<std::string_view, 6> argv{"SET", key, value, "NX", "PX", "10000"};
    std::array<const char*, 6> ptrs{};
    std::array<std::size_t, 6> lens{};
    for (std::size_t i = 0; i < argv.size(); ++i) {
        ptrs[i] = argv[i].data();
        lens[i] = argv[i].size();
    }
    std::string out;
    out.reserve(4096);
    const alloc_meter meter{state};
    for (auto _ : state) {
        out.clear();
        sds encoded = nullptr;
        const int len = redisFormatSdsCommandArgv(&encoded, 6, ptrs.data(), lens.data());
        out.append(encoded, static_cast<std::size_t>(len));
        redisFreeSdsCommand(encoded);
        benchmark::DoNotOptimize(out.data());
    }
    std::string library;
    redlock::detail::append_command(library, {"SET", key, value, "NX", "PX", "10000"});
    if (library != out) state.SkipWithError("the library's encoding disagrees with hiredis's");
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
}
BENCHMARK(encode_set_hiredis_reference);

// ---- reply parsing ---------------------------------------------------------------------------

/// A RESP buffer of `n` replies, fed to one redisReader and popped one by
/// one (each reply object is allocated by hiredis and freed), as a
/// connection does with what one read() returned. `kind` 0: "+OK" (a granted
/// SET), 1: ":1" (a release), 2: "$-1" (a refused SET), 3: "*2 :1 :7" (the
/// acquire script's {granted, counter}).
void parse_replies(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    static constexpr std::string_view wire[] = {"+OK\r\n", ":1\r\n", "$-1\r\n",
                                                "*2\r\n:1\r\n:7\r\n"};
    const std::string_view one = wire[state.range(1)];
    std::string buffer;
    for (std::size_t i = 0; i < n; ++i) buffer += one;
    redisReader* reader = redisReaderCreate();
    std::uint64_t popped = 0;
    {
        const alloc_meter meter{state};
        for (auto _ : state) {
            redisReaderFeed(reader, buffer.data(), buffer.size());
            for (;;) {
                void* reply = nullptr;
                if (redisReaderGetReply(reader, &reply) != REDIS_OK || reply == nullptr) break;
                ++popped;
                freeReplyObject(reply);
            }
        }
    }
    redisReaderFree(reader);
    if (popped != n * state.iterations()) state.SkipWithError("reply count mismatch");
    state.SetItemsProcessed(static_cast<std::int64_t>(popped));
}
BENCHMARK(parse_replies)
    ->ArgNames({"replies", "kind"})
    ->Args({1, 0})
    ->Args({5, 0})
    ->Args({100, 0})
    ->Args({5, 1})
    ->Args({5, 2})
    ->Args({5, 3});

// ---- configuration ---------------------------------------------------------------------------

void config_loading(benchmark::State& state) {
    std::string text;
    if (std::FILE* f = std::fopen(REDLOCK_SOURCE_DIR "/configs/local.json", "rb")) {
        char chunk[4096];
        for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) text.append(chunk, n);
        std::fclose(f);
    }
    if (text.empty()) {
        state.SkipWithError("cannot read configs/local.json");
        return;
    }
    const alloc_meter meter{state};
    for (auto _ : state) {
        auto config = redlock::parse_config(text, "configs/local.json");
        if (!config) {
            state.SkipWithError(config.error().what().c_str());
            break;
        }
        benchmark::DoNotOptimize(config);
    }
}
BENCHMARK(config_loading);

// ---- the load generator's own instrument -----------------------------------------------------

/// What recording one latency costs the load generator (redlock_load).
void histogram_record(benchmark::State& state) {
    static redlock::bench::histogram h;
    std::uint64_t v = 12'345;
    const alloc_meter meter{state};
    for (auto _ : state) {
        h.record(v);
        v = v * 6364136223846793005ULL + 1442695040888963407ULL;
        v >>= 40;
    }
}
BENCHMARK(histogram_record);

}  // namespace

BENCHMARK_MAIN();
