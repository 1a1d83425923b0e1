#pragma once

#include <cstdint>

namespace redlock::bench {

/// Heap allocations made by this process so far: C++ `new` (the global
/// operators are replaced in alloc_counter.cpp) and C `malloc`/`calloc`/
/// `realloc` (interposed there, so hiredis's and libuv's allocations count
/// too). Each thread counts into its own slot, so counting costs no atomic
/// read-modify-write; the total is exact whenever the counting threads are
/// quiet, which is when the benchmarks read it (between phases, or after a
/// measured loop).
[[nodiscard]] auto allocations() noexcept -> std::uint64_t;

/// Also keeps the number of heap bytes in use (malloc_usable_size of every
/// block allocated and not yet freed, from now on). Off by default: it costs
/// two extra calls per allocation. Call it first thing in main.
void track_heap_bytes() noexcept;

/// Heap bytes in use, counted since track_heap_bytes() (0 if it was never
/// called). Blocks allocated before and freed after make it slightly low.
[[nodiscard]] auto heap_bytes() noexcept -> std::int64_t;

}  // namespace redlock::bench
