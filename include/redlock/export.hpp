#pragma once

// REDLOCK_API marks the library's public classes and functions. A shared
// libredlock is compiled with hidden visibility (lib/CMakeLists.txt), so only
// what carries this mark is exported: the public API is the ABI, and the
// internals (lib/detail) can change without a new SONAME. GCC and Clang use
// the same attribute when building and when using the library, so one
// definition serves both; in a static library it changes nothing. The
// standard attribute syntax lets it follow [[nodiscard]] in a class head.
#if defined(__GNUC__) || defined(__clang__)
#define REDLOCK_API [[gnu::visibility("default")]]
#else
#define REDLOCK_API
#endif
