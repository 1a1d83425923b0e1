#!/usr/bin/env bash
# The README's first command: install what is missing, build, start the five
# local masters of configs/local.json, run the demo, and stop the masters again.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_TESTS=OFF \
      -DREDLOCK_BUILD_BENCH=OFF >/dev/null
cmake --build build/release -j"$(nproc)" >/dev/null

trap 'scripts/local-cluster.sh stop configs/local.json' EXIT
scripts/local-cluster.sh start configs/local.json
build/release/examples/redlock_demo configs/local.json
scripts/demo-cli.sh configs/local.json
