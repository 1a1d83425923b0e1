#error \
    "lib/sansio must not include <openssl/bio.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
