#!/usr/bin/env bash
# The README's second command: install what is missing, build with warnings as
# errors, run every test (unit and integration, against real redis-server
# processes the tests start themselves), then check that an installed copy
# works with find_package(redlock).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scripts/install-deps.sh
command -v redis-server >/dev/null || { echo "test: redis-server is missing" >&2; exit 1; }

build=build/test
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
(cd "$build" && ctest --output-on-failure -j"$(nproc)" --timeout 300)

# Install to a scratch prefix and build a consumer against it.
prefix=$root/$build/install-tree
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S tests/consumer -B "$build/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build/consumer" >/dev/null
"$build/consumer/redlock_consumer"
echo "test: all passed"
