// Preloaded ahead of libfaketime into the one redis-server that clock_step_test
// runs under a stepped clock: glibc's malloc instead of jemalloc. Debian's
// redis-server links the system jemalloc, whose initialisation calls
// clock_gettime before libfaketime has initialised, and libfaketime then
// refuses to run (libfaketime issues #130, #327: "Unexpected recursive calls
// to clock_gettime()"). With every allocation in glibc, jemalloc is never
// initialised by an allocation; Redis still calls it for statistics
// (mallctl), by which time libfaketime is up. Never linked into a test binary.
#include <cerrno>
#include <cstddef>
#include <dlfcn.h>

extern "C" {
void* __libc_malloc(std::size_t n);
void* __libc_calloc(std::size_t count, std::size_t n);
void* __libc_realloc(void* p, std::size_t n);
void __libc_free(void* p);
void* __libc_memalign(std::size_t alignment, std::size_t n);

__attribute__((visibility("default"))) void* malloc(std::size_t n) {
    return __libc_malloc(n);
}
__attribute__((visibility("default"))) void* calloc(std::size_t count, std::size_t n) {
    return __libc_calloc(count, n);
}
__attribute__((visibility("default"))) void* realloc(void* p, std::size_t n) {
    return __libc_realloc(p, n);
}
__attribute__((visibility("default"))) void free(void* p) {
    __libc_free(p);
}
__attribute__((visibility("default"))) void* memalign(std::size_t alignment, std::size_t n) {
    return __libc_memalign(alignment, n);
}
__attribute__((visibility("default"))) void* aligned_alloc(std::size_t alignment, std::size_t n) {
    return __libc_memalign(alignment, n);
}
__attribute__((visibility("default"))) int posix_memalign(void** out, std::size_t alignment,
                                                          std::size_t n) {
    void* p = __libc_memalign(alignment, n);
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
}
/// glibc's, found in libc itself: the name alone would resolve to jemalloc's,
/// which knows nothing of glibc's blocks (Redis sizes every allocation with it).
__attribute__((visibility("default"))) std::size_t malloc_usable_size(void* p) {
    using size_fn = std::size_t (*)(void*);
    static size_fn real = nullptr;
    if (real == nullptr) {
        void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        real = reinterpret_cast<size_fn>(dlsym(libc, "malloc_usable_size"));
    }
    return p == nullptr || real == nullptr ? 0 : real(p);
}
}
