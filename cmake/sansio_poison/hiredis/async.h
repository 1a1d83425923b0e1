#error \
    "lib/sansio must not include <hiredis/async.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
