#error \
    "lib/sansio must not include <openssl/evp.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
