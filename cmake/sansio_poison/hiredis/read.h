#error \
    "lib/sansio must not include <hiredis/read.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
