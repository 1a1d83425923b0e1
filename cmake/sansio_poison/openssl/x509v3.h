#error \
    "lib/sansio must not include <openssl/x509v3.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
