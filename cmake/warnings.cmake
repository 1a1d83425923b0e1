# Our warning flags, on an INTERFACE target that is never exported: consumers'
# builds are theirs to configure. -Wnull-dereference is left out: with GCC 12 at
# -O2 it reports false positives inside std::variant and std::function.
add_library(redlock_warnings INTERFACE)
target_compile_options(redlock_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
                       $<$<BOOL:${REDLOCK_WERROR}>:-Werror>)
