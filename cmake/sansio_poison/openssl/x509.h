#error \
    "lib/sansio must not include <openssl/x509.h>: decisions take replies, time and randomness as inputs (docs/architecture.md)"
