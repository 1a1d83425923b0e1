#!/usr/bin/env bash
# The renewal cost of held locks, a session against per-lock renewal (issue 28, item 6), in one
# command; docs/benchmarks.md, "Sessions: renewal cost":
#
#   bench/session_renewal.sh               # about 2 minutes: 1,000 and 10,000 locks, each mode,
#                                          # 3 repetitions, medians; writes under the build dir
#   bench/session_renewal.sh --write-docs  # the same, and the section in docs/benchmarks.md and
#                                          # bench/benchmarks.md.in is replaced by this run's
#   bench/session_renewal.sh --smoke       # about 15 s: 200 locks, 2 ticks, one repetition;
#                                          # fails unless per-lock renewal sends at least 10x the
#                                          # session's commands and every lock stayed valid
#
# Options:
#   --base-port N   the 5 masters listen on 127.0.0.1 ports N to N+4; default 7411, or
#                   $REDLOCK_SESSION_BENCH_PORT_BASE. Clear of bench/run.sh's 7401-7407, the demo's
#                   7001-7005 and bench/tls.sh's 7301-7313. A port in use stops the run before
#                   anything starts, naming the port. "auto": 5 free ports from 24000-32000 (the
#                   ctest check bench_session_renewal_smoke).
#   --repeat R      repetitions of the 4 runs (modes in turn, ABBA), medians reported; default 3
#   --no-build      use the binary already built; configure and build nothing
#   --help          this text
# Environment: REDLOCK_BENCH_BUILD names the build directory (default build/bench-release, as
# bench/run.sh); REDLOCK_BENCH_JOBS the build's parallel jobs (default: the cores).
#
# Each run (build/bench/redlock_session_renewal) acquires N locks paced over a tick, lets
# renewals settle for a tick, measures 5 ticks (TTL 3000 ms, renewed every third: a tick is 1 s)
# and releases them. The runs at 10,000 locks use request_timeout 1 s; then one run of each
# mode at 10,000 with the default 50 ms says whether the locks survive it (not a failure if not).
# Without --write-docs it writes under BUILD/session-bench/ only: each run's JSON line and log in
# results/<UTC time>/, the table there (table.md, also printed), and its masters' pid files, logs
# and data in servers/. The masters it started, and only those, are stopped by pid when it ends,
# however it ends.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

fail() { echo "session_renewal: $*" >&2; exit 64; }
invocation="bench/session_renewal.sh${*:+ $*}"  # for the table's "Reproduce"
[[ -n ${REDLOCK_BENCH_BUILD:-} ]] && invocation="REDLOCK_BENCH_BUILD=$REDLOCK_BENCH_BUILD $invocation"
write_docs=0 smoke=0 build_step=1 repeat=3
base=${REDLOCK_SESSION_BENCH_PORT_BASE:-7411}
while (($#)); do
  case $1 in
    --write-docs) write_docs=1 ;;
    --smoke) smoke=1 ;;
    --no-build) build_step=0 ;;
    --repeat) (($# > 1)) || fail "--repeat needs a count"; repeat=$2; shift ;;
    --base-port) (($# > 1)) || fail "--base-port needs a port"; base=$2; shift ;;
    --base-port=*) base=${1#*=} ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0"; exit 0 ;;
    *) fail "unknown argument '$1' (bench/session_renewal.sh --help lists them)" ;;
  esac
  shift
done
if [[ $base == auto ]]; then  # 5 free ports on loopback, below the ephemeral range
  base=$(python3 - <<'PY'
import random, socket
for _ in range(200):
    base = random.randrange(24000, 32000)
    try:
        for port in range(base, base + 5):
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
  )
fi
if ! [[ $base =~ ^[1-9][0-9]{3,4}$ ]] || ((base < 1024 || base + 4 > 65535)); then
  fail "--base-port (or REDLOCK_SESSION_BENCH_PORT_BASE) must be a port from 1024 to 65531"
fi
[[ $repeat =~ ^[1-9]$ ]] || fail "--repeat must be 1 to 9, not '$repeat'"
[[ $write_docs == 1 && $smoke == 1 ]] && fail "--write-docs publishes a full run, not --smoke"

build=${REDLOCK_BENCH_BUILD:-build/bench-release}
binary=$build/bench/redlock_session_renewal
work=$build/session-bench
stamp=$(date -u +%Y%m%dT%H%M%SZ)
results=$work/results/$stamp
[[ -e $results ]] && results+=-$$
if [[ $smoke == 1 ]]; then
  sizes=(200) repeat=1 run_args=(--ticks 2 --settle-ticks 1 --ttl-ms 1500)
else
  sizes=(1000 10000) run_args=(--ticks 5 --settle-ticks 1 --ttl-ms 3000)
fi
# A session's renewal of 10,000 locks is one script call per node that runs longer than the
# default request_timeout (50 ms) here: measured with 1 s, and once more with the default
# (does it survive?).
big=10000 big_timeout_ms=1000
ports=$(seq "$base" $((base + 4)))

for tool in redis-server redis-cli python3 flock; do
  command -v "$tool" >/dev/null || { echo "session_renewal: $tool is not installed" >&2; exit 69; }
done
mkdir -p "$work"
# One run per build directory at a time; the lock goes with this shell (fd 9).
exec 9>"$work/lock"
flock -n 9 || { echo "session_renewal: another run is going on in $build" >&2; exit 75; }
servers_dir=$(realpath "$work")/servers
servers_knob="--base-port N (or REDLOCK_SESSION_BENCH_PORT_BASE=N; this run: $base)"
# shellcheck source=bench/run_servers.sh
source bench/run_servers.sh
run_pid=""  # the run going on, if any: stopped by its pid when this script ends early
# shellcheck disable=SC2317 # run by the EXIT trap
on_exit() {
  if [[ -n $run_pid ]]; then
    kill "$run_pid" 2>/dev/null || true
    wait "$run_pid" 2>/dev/null || true
  fi
  servers_stop
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# shellcheck disable=SC2086 # a list of ports
servers_check_free $ports
mkdir -p "$results"

if [[ $build_step == 1 ]]; then
  if [[ ! -f $build/CMakeCache.txt ]]; then
    echo "session_renewal: configuring Release in $build"
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_TESTS=OFF \
          -DREDLOCK_BUILD_CLI=OFF -DREDLOCK_BUILD_EXAMPLES=OFF >/dev/null
  fi
  grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build/CMakeCache.txt" ||
    echo "session_renewal: warning: $build is not a Release build" >&2
  echo "session_renewal: building redlock_session_renewal in $build"
  cmake --build "$build" -j"${REDLOCK_BENCH_JOBS:-$(nproc)}" --target redlock_session_renewal \
    >"$results/build.log"
fi
[[ -x $binary ]] || { echo "session_renewal: $binary is not built" >&2; exit 69; }

config=$results/five.json
nodes=""
for port in $ports; do nodes+="${nodes:+,$'\n'}    { \"host\": \"127.0.0.1\", \"port\": $port }"; done
cat >"$config" <<EOF
{
  "nodes": [
$nodes
  ],
  "key_prefix": "redlock:",
  "connect_timeout_ms": 200,
  "request_timeout_ms": 50,
  "clock_drift_factor": 0.01,
  "clock_drift_floor_ms": 2,
  "lock": { "ttl_ms": 3000, "min_validity_ms": 1, "auto_renew": false, "fencing": false },
  "retry": { "attempts": 3, "delay_ms": 200, "jitter_ms": 100 },
  "reconnect": { "min_delay_ms": 50, "max_delay_ms": 2000 }
}
EOF

# shellcheck disable=SC2086 # a list of ports
servers_start $ports
echo "session_renewal: 5 masters on 127.0.0.1:$base-$((base + 4)), results in $results"
load_start=$(cut -d' ' -f1 /proc/loadavg)
failed=0
one_run() {  # LABEL EXPECTED(pass|any) ARGS...: one run, its JSON line in RESULTS/LABEL.json
  local label=$1 expected=$2 status=0; shift 2
  # In the background, waited for: a signal to this script is acted on at once.
  timeout 150 "$binary" --config "$config" "$@" >"$results/$label.json" 2>"$results/$label.log" &
  run_pid=$!
  wait "$run_pid" || status=$?
  run_pid=""
  if [[ $status != 0 && $expected == pass ]]; then
    failed=1
    echo "session_renewal: run $label failed; the end of its log:" >&2
    tail -5 "$results/$label.log" >&2
  fi
  echo "session_renewal: [$label] $(tail -1 "$results/$label.log" | sed 's/^session_renewal: //')"
}
for ((r = 1; r <= repeat; r++)); do
  for n in "${sizes[@]}"; do
    modes=(session per-lock)
    ((r % 2 == 0)) && modes=(per-lock session)
    timeout_args=()
    [[ $n == "$big" ]] && timeout_args=(--request-timeout-ms "$big_timeout_ms")
    for mode in "${modes[@]}"; do
      one_run "$n-$mode-$r" pass --locks "$n" --mode "$mode" "${run_args[@]}" "${timeout_args[@]}"
    done
  done
done
if [[ $smoke == 0 ]]; then  # informative: a session may be lost here
  for mode in session per-lock; do
    one_run "$big-$mode-default-timeout" any --locks "$big" --mode "$mode" --ticks 3 \
      --settle-ticks 1 --ttl-ms 3000
  done
fi
servers_stop

# The table (medians over the repetitions), and the smoke test's check.
cat "$results"/*-*-[0-9].json >"$results/runs.jsonl"
cat "$results"/*-default-timeout.json >"$results/default-timeout.jsonl" 2>/dev/null || true
python3 bench/session_renewal_table.py "$results/runs.jsonl" "$results/table.md" \
  --smoke "$smoke" --command "$invocation" --repeat "$repeat" \
  --default-timeout "$results/default-timeout.jsonl" --load-start "$load_start" || failed=1
cat "$results/table.md"
if [[ $write_docs == 1 ]]; then
  if [[ $failed == 1 ]]; then
    echo "session_renewal: a run failed: docs/benchmarks.md left as it was" >&2
  else
    python3 bench/session_renewal_table.py --write-docs "$results/table.md" \
      docs/benchmarks.md bench/benchmarks.md.in
    echo "session_renewal: section 'Sessions: renewal cost' written to docs/benchmarks.md" \
         "and bench/benchmarks.md.in"
  fi
fi
echo "session_renewal: done in $SECONDS s; table: $results/table.md"
exit "$failed"
