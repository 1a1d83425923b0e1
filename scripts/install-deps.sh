#!/usr/bin/env bash
# Installs the Debian packages the project needs, if any is missing.
# Runs apt-get as root, or through sudo otherwise. Idempotent and quiet when
# everything is already there.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libhiredis-dev libuv1-dev nlohmann-json3-dev
  libssl-dev openssl  # TLS to the nodes; openssl(1) makes the TLS tests' certificates
  doctest-dev libbenchmark-dev libcli11-dev
  redis-server redis-tools   # redis-cli builds the tests' clusters (--cluster create)
  redis-sentinel             # Sentinel-managed members, in the tests
  faketime                   # clock_step_test: steps one redis-server's clock (libfaketime)
  python3 python3-prometheus-client          # tests: the metrics test parses with a real parser
  help2man man-db groff-base bash-completion  # redlock(1) and the completion, and their tests
  dpkg-dev file                               # cpack -G DEB: dpkg-shlibdeps finds the Depends
)
# scripts/test.sh's sanitizer trees (CMakePresets.json: asan-ubsan and tsan name clang) and its
# fuzz targets. libclang-rt-14-dev holds clang's ASan, UBSan, TSan and libFuzzer runtimes; clang
# only recommends it, and --no-install-recommends below would leave it out.
if [[ "${REDLOCK_WITH_CLANG:-0}" == 1 ]]; then
  packages+=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == *"install ok installed"* ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
as_root=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts a system redis-server on 6379 when the package is installed; we
# never use it (our masters run on their own ports), so leave it as it is.
