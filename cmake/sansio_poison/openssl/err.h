#error \
    "lib/sansio must not include <openssl/err.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
