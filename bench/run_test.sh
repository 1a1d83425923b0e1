#!/usr/bin/env bash
# bench/run.sh's promises, in about 10 s, against real redis-server processes:
#   - --help documents its knobs, and --dry-run puts the report under the build directory
#     unless --write-docs is given (which --quick refuses);
#   - a port in use stops it before anything runs, with a message naming the port and
#     --base-port, and the server on that port (not its own) keeps running;
#   - a short real run (--smoke: 5 masters of its own, one 0.2 s phase) writes nothing
#     outside the build directory (docs/ included), prints one line per phase and no JSON,
#     says where the report is, and stops the masters it started; so does a run ended by
#     SIGTERM while its masters are up.
# Fails loudly without redis-server. Usage: run_test.sh BUILD_DIR (a tree with
# bench/redlock_load and bench/redlock_bench_report built, used as it is: --no-build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "$1")
run=$root/bench/run.sh
fail() { echo "run_test: $*" >&2; exit 1; }
command -v redis-server >/dev/null || fail "redis-server is missing"
[[ -x $build/bench/redlock_load ]] || fail "$build/bench/redlock_load is not built"
export REDLOCK_BENCH_BUILD=$build
work=$(mktemp -d)
pids=()
cleanup() {
  local status=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

# free_base: a port with it and the 6 above it free on loopback, below the ephemeral range.
free_base() {
  python3 - <<'PY'
import random, socket
for _ in range(200):
    base = random.randrange(24000, 32000)
    try:
        for port in range(base, base + 7):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            finally:
                s.close()
    except OSError:
        continue
    print(base)
    break
PY
}
# all_free BASE COUNT: nothing listens on BASE .. BASE+COUNT-1 (a run's masters are gone).
all_free() {
  python3 - "$1" "$2" <<'PY'
import socket, sys
base, count = int(sys.argv[1]), int(sys.argv[2])
for port in range(base, base + count):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        sys.exit(f"port {port} still in use")
    finally:
        s.close()
PY
}

# --help and --dry-run.
help=$("$run" --help)
for knob in --quick --kinds --write-docs --base-port REDLOCK_BENCH_PORT_BASE --dry-run; do
  [[ $help == *"$knob"* ]] || fail "--help does not mention $knob"
done
for args in "" "--quick" "--kinds"; do
  # shellcheck disable=SC2086 # no argument, or one
  where=$("$run" $args --dry-run | tail -1)
  [[ $where == *" $build/results/"*/benchmarks.md ]] ||
    fail "run.sh $args would write its report outside $build/results: '$where'"
done
[[ $("$run" --write-docs --dry-run | tail -1) == *" docs/benchmarks.md" ]] ||
  fail "run.sh --write-docs would not write docs/benchmarks.md"
if "$run" --quick --write-docs --dry-run >/dev/null 2>&1; then
  fail "--quick --write-docs was accepted"
fi

# A port in use: refused, naming it; the stranger on it is left running.
base=$(free_base)
[[ -n $base ]] || fail "no 7 free ports found"
taken=$((base + 2))
redis-server --port "$taken" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --logfile "$work/stranger.log" &
stranger=$!
pids+=("$stranger")
for _ in $(seq 100); do
  [[ $(redis-cli -p "$taken" ping 2>/dev/null) == PONG ]] && break
  sleep 0.05
done
set +e
refused=$("$run" --smoke --no-build --base-port "$base" 2>&1)
status=$?
set -e
[[ $status != 0 ]] || fail "run.sh ran with port $taken in use"
[[ $refused == *"port $taken is already in use"*"--base-port"* ]] ||
  fail "the refusal does not name port $taken and --base-port: '$refused'"
kill -0 "$stranger" 2>/dev/null || fail "run.sh stopped the server on $taken, not its own"
[[ $(redis-cli -p "$taken" ping 2>/dev/null) == PONG ]] || fail "the server on $taken went quiet"

# The smoke run, on the 5 ports above the stranger's.
base=$((taken + 1))
marker=$work/marker
touch "$marker"
sleep 1  # a file written during the run is strictly newer than the marker
"$run" --smoke --no-build --base-port "$base" >"$work/out" 2>"$work/err" ||
  fail "run.sh --smoke failed: $(cat "$work/err")"
[[ ! -s $work/err ]] || fail "run.sh --smoke wrote to stderr: $(cat "$work/err")"
# Python's bytecode caches are not the run's output: a bench script run by another test at the same
# time (ctest -j) may write one (the bench tests set PYTHONDONTWRITEBYTECODE=1; a cache is ignored
# all the same).
changed=$(find "$root" \( -path "$root/.git" -o -path "$root/build" -o -path "$build" \
                          -o -name __pycache__ \) -prune -o -type f -newer "$marker" -print)
[[ -z $changed ]] || fail "run.sh --smoke wrote outside the build directory: $changed"
grep -v '^bench: ' "$work/out" && fail "console lines not from run.sh (above)"
grep -q '[{}]' "$work/out" && fail "JSON on the console: $(cat "$work/out")"
phase1='^bench: \[1/2\] c1 +[0-9]+ s  lib [0-9,]+ ops/s, raw [0-9,]+: lib/raw [0-9.]+'
grep -qE "$phase1" "$work/out" ||
  fail "no summary line for phase 1 of 2: $(cat "$work/out")"
grep -qE '^bench: \[2/2\] report' "$work/out" || fail "no line for the report: $(cat "$work/out")"
report=$(sed -n 's/^bench: done in .*; report: \([^ ]*\) .*/\1/p' "$work/out")
[[ $report == "$build/results/"*/benchmarks.md && -s $report ]] ||
  fail "the last line names no report under $build/results: $(tail -1 "$work/out")"
[[ -s $(dirname "$report")/c1.json ]] || fail "no c1.json beside the report"
all_free "$base" 5 || fail "run.sh --smoke left a master running"
rm -rf "$(dirname "$report")"

# SIGTERM while the masters are up: they are stopped all the same.
"$run" --smoke --no-build --base-port "$base" >"$work/out" 2>"$work/err" &
runner=$!
pids+=("$runner")
for _ in $(seq 200); do
  (($(find "$build/bench-run/servers" -name 'redis-*.pid' 2>/dev/null | wc -l) == 5)) && break
  sleep 0.02
done
kill -TERM "$runner" 2>/dev/null || true
wait "$runner" || true
all_free "$base" 5 || fail "run.sh, terminated, left a master running"
[[ -z $(find "$build/bench-run/servers" -name 'redis-*.pid') ]] || fail "pid files left behind"
stamp=$(sed -n 's|.*, results in .*/results/\([0-9TZ-]*\)$|\1|p' "$work/out")
[[ -z $stamp ]] || rm -rf "${build:?}/results/$stamp"
for port in $(seq "$base" $((base + 4))); do rm -rf "$build/bench-run/servers/$port"; done
echo "run_test: bench/run.sh: knobs documented, port in use refused, smoke run clean"
