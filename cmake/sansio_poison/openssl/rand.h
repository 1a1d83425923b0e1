#error \
    "lib/sansio must not include <openssl/rand.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
