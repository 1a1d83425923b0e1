# Our warning flags, on an INTERFACE target that is never exported: consumers'
# builds are theirs to configure.
add_library(redlock_warnings INTERFACE)
target_compile_options(redlock_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wnull-dereference
                       $<$<BOOL:${REDLOCK_WERROR}>:-Werror>)
