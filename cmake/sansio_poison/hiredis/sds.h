#error \
    "lib/sansio must not include <hiredis/sds.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
