#error \
    "lib/sansio must not include <openssl/crypto.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
