#error \
    "lib/sansio must not include <uv.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
