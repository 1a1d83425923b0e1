// Counts every heap allocation of the process. Linked into the benchmark
// binaries only: it replaces the global operator new/delete and interposes
// malloc, calloc and realloc (glibc allows an executable to define them; the
// originals stay reachable as __libc_*). Everything is still allocated by
// glibc, so a pointer from any allocation function may be freed by any other.
#include "alloc_counter.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <malloc.h>
#include <new>

#ifdef REDLOCK_BENCH_NO_ALLOC_COUNT

namespace redlock::bench {
auto allocations() noexcept -> std::uint64_t {
    return 0;
}
void track_heap_bytes() noexcept {}
auto heap_bytes() noexcept -> std::int64_t {
    return 0;
}
}  // namespace redlock::bench

#else

extern "C" {
void* __libc_malloc(std::size_t size);  // NOLINT(bugprone-reserved-identifier)
void* __libc_calloc(std::size_t n, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void __libc_free(void* p);
}

namespace {

// One slot per thread that ever allocated; a thread only writes its own slot
// (a plain load and store, no locked instruction), readers sum them all.
struct slot {
    std::atomic<std::uint64_t> allocations{0};
    std::atomic<std::int64_t> bytes{0};  // may go negative: freed here, allocated elsewhere
};
constexpr std::size_t max_threads = 256;
slot slots[max_threads];  // zero-initialised (static storage)
std::atomic<std::size_t> slots_used{0};
constinit thread_local slot* my_slot = nullptr;
std::atomic<bool> tracking{false};

inline auto mine() noexcept -> slot& {
    slot* s = my_slot;
    if (s == nullptr) {
        const std::size_t i = slots_used.fetch_add(1, std::memory_order_relaxed);
        // Past the table, threads share the last slot: counts may then be
        // slightly low, never wrong by more than the races on that one slot.
        s = &slots[i < max_threads ? i : max_threads - 1];
        my_slot = s;
    }
    return *s;
}

inline void add_bytes(slot& s, std::int64_t delta) noexcept {
    s.bytes.store(s.bytes.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

/// Counts one allocation that returned `p`.
inline auto counted(void* p) noexcept -> void* {
    slot& s = mine();
    s.allocations.store(s.allocations.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    if (p != nullptr && tracking.load(std::memory_order_relaxed))
        add_bytes(s, static_cast<std::int64_t>(malloc_usable_size(p)));
    return p;
}

inline void release(void* p) noexcept {
    if (p != nullptr && tracking.load(std::memory_order_relaxed))
        add_bytes(mine(), -static_cast<std::int64_t>(malloc_usable_size(p)));
    __libc_free(p);
}

auto checked(void* p) -> void* {
    if (p == nullptr) throw std::bad_alloc{};
    return p;
}

auto aligned(std::size_t size, std::align_val_t align) -> void* {
    void* p = nullptr;
    const auto a = static_cast<std::size_t>(align);
    if (posix_memalign(&p, a < sizeof(void*) ? sizeof(void*) : a, size == 0 ? 1 : size) != 0)
        throw std::bad_alloc{};
    return counted(p);
}

}  // namespace

namespace redlock::bench {

auto allocations() noexcept -> std::uint64_t {
    std::uint64_t total = 0;
    const std::size_t used = slots_used.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < used && i < max_threads; ++i)
        total += slots[i].allocations.load(std::memory_order_relaxed);
    return total;
}

void track_heap_bytes() noexcept {
    tracking.store(true);
}

auto heap_bytes() noexcept -> std::int64_t {
    std::int64_t total = 0;
    const std::size_t used = slots_used.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < used && i < max_threads; ++i)
        total += slots[i].bytes.load(std::memory_order_relaxed);
    return total;
}

}  // namespace redlock::bench

extern "C" {

// NOLINTBEGIN(readability-inconsistent-declaration-parameter-name)
void* malloc(std::size_t size) {
    return counted(__libc_malloc(size));
}

void* calloc(std::size_t n, std::size_t size) {
    return counted(__libc_calloc(n, size));
}

void* realloc(void* p, std::size_t size) {
    if (p != nullptr && tracking.load(std::memory_order_relaxed))
        add_bytes(mine(), -static_cast<std::int64_t>(malloc_usable_size(p)));
    return counted(__libc_realloc(p, size));
}

void free(void* p) {
    release(p);
}
// NOLINTEND(readability-inconsistent-declaration-parameter-name)
}

// The C++ operators go straight to glibc, so one `new` counts once.
auto operator new(std::size_t size) -> void* {
    return checked(counted(__libc_malloc(size == 0 ? 1 : size)));
}
auto operator new[](std::size_t size) -> void* {
    return checked(counted(__libc_malloc(size == 0 ? 1 : size)));
}
auto operator new(std::size_t size, const std::nothrow_t&) noexcept -> void* {
    return counted(__libc_malloc(size == 0 ? 1 : size));
}
auto operator new[](std::size_t size, const std::nothrow_t&) noexcept -> void* {
    return counted(__libc_malloc(size == 0 ? 1 : size));
}
auto operator new(std::size_t size, std::align_val_t align) -> void* {
    return aligned(size, align);
}
auto operator new[](std::size_t size, std::align_val_t align) -> void* {
    return aligned(size, align);
}
void operator delete(void* p) noexcept {
    release(p);
}
void operator delete[](void* p) noexcept {
    release(p);
}
void operator delete(void* p, std::size_t) noexcept {
    release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    release(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
    release(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
    release(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
    release(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
    release(p);
}

#endif  // REDLOCK_BENCH_NO_ALLOC_COUNT
