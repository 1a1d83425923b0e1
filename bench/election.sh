#!/usr/bin/env bash
# What leader election costs (issue 28, item 6), in one command; docs/benchmarks.md, "Leader
# election: failover and overhead":
#
#   bench/election.sh               # about 2 minutes: 30 failover trials (TTL 1000 ms), 200
#                                   # overhead cycles of each kind, callgrind; writes under the
#                                   # build dir
#   bench/election.sh --write-docs  # the same, and the section in docs/benchmarks.md and
#                                   # bench/benchmarks.md.in is replaced by this run's
#   bench/election.sh --smoke       # about 15 s: 3 trials at TTL 500 ms, 20 cycles, no
#                                   # callgrind; fails unless every standby led in a higher term
#                                   # within TTL + 1 s of the kill and every cycle succeeded
#
# Options:
#   --base-port N   the 5 masters listen on 127.0.0.1 ports N to N+4; default 7421, or
#                   $REDLOCK_ELECTION_BENCH_PORT_BASE. Clear of bench/run.sh's 7401-7407,
#                   bench/session_renewal.sh's 7411-7415, the demo's 7001-7005 and bench/tls.sh's
#                   7301-7313. A port in use stops the run before anything starts, naming the
#                   port. "auto": 5 free ports from 24000-32000 (the ctest check
#                   bench_election_smoke).
#   --trials K      failover trials (default 30)
#   --ttl-ms T      the leadership's TTL (default 1000)
#   --iterations N  overhead cycles of each kind (default 200)
#   --no-callgrind  skip the instruction counts
#   --no-build      use the binary already built; configure and build nothing
#   --help          this text
# Environment: REDLOCK_BENCH_BUILD names the build directory (default build/bench-release, as
# bench/run.sh); REDLOCK_BENCH_JOBS the build's parallel jobs (default: the cores).
#
# The run (BUILD/bench/redlock_election_bench) measures the overhead first, then the failover
# trials: each starts a leader process (the same binary, --lead), lets a standby of its own
# campaign behind it, SIGKILLs the leader at a random moment of its renewal cycle and times the
# standby's win. Callgrind then runs each overhead kind alone for 20 and 120 cycles: the
# difference over 100 is instructions per cycle. Without --write-docs it writes under
# BUILD/election-bench/ only: the JSON line, logs and callgrind files in results/<UTC time>/, the
# table there (table.md, also printed), and its masters' pid files, logs and data in servers/.
# The masters it started, and only those, are stopped by pid when it ends, however it ends.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

fail() { echo "election: $*" >&2; exit 64; }
invocation="bench/election.sh${*:+ $*}"  # for the table's "Reproduce"
[[ -n ${REDLOCK_BENCH_BUILD:-} ]] && invocation="REDLOCK_BENCH_BUILD=$REDLOCK_BENCH_BUILD $invocation"
write_docs=0 smoke=0 build_step=1 callgrind=1 trials=30 ttl=1000 iterations=200
base=${REDLOCK_ELECTION_BENCH_PORT_BASE:-7421}
while (($#)); do
  case $1 in
    --write-docs) write_docs=1 ;;
    --smoke) smoke=1 ;;
    --no-build) build_step=0 ;;
    --no-callgrind) callgrind=0 ;;
    --trials) (($# > 1)) || fail "--trials needs a count"; trials=$2; shift ;;
    --ttl-ms) (($# > 1)) || fail "--ttl-ms needs a TTL"; ttl=$2; shift ;;
    --iterations) (($# > 1)) || fail "--iterations needs a count"; iterations=$2; shift ;;
    --base-port) (($# > 1)) || fail "--base-port needs a port"; base=$2; shift ;;
    --base-port=*) base=${1#*=} ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0"; exit 0 ;;
    *) fail "unknown argument '$1' (bench/election.sh --help lists them)" ;;
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
  fail "--base-port (or REDLOCK_ELECTION_BENCH_PORT_BASE) must be a port from 1024 to 65531"
fi
[[ $trials =~ ^[1-9][0-9]{0,2}$ ]] || fail "--trials must be 1 to 999, not '$trials'"
[[ $ttl =~ ^[1-9][0-9]{2,4}$ ]] || fail "--ttl-ms must be 100 to 60000, not '$ttl'"
[[ $iterations =~ ^[1-9][0-9]{0,4}$ ]] || fail "--iterations must be 1 to 99999"
[[ $write_docs == 1 && $smoke == 1 ]] && fail "--write-docs publishes a full run, not --smoke"
if [[ $smoke == 1 ]]; then
  trials=3 ttl=500 iterations=20 callgrind=0
fi
command -v valgrind >/dev/null || callgrind=0

build=${REDLOCK_BENCH_BUILD:-build/bench-release}
binary=$build/bench/redlock_election_bench
work=$build/election-bench
stamp=$(date -u +%Y%m%dT%H%M%SZ)
results=$work/results/$stamp
[[ -e $results ]] && results+=-$$
ports=$(seq "$base" $((base + 4)))

for tool in redis-server redis-cli python3 flock; do
  command -v "$tool" >/dev/null || { echo "election: $tool is not installed" >&2; exit 69; }
done
mkdir -p "$work"
# One run per build directory at a time; the lock goes with this shell (fd 9).
exec 9>"$work/lock"
flock -n 9 || { echo "election: another run is going on in $build" >&2; exit 75; }
servers_dir=$(realpath "$work")/servers
servers_knob="--base-port N (or REDLOCK_ELECTION_BENCH_PORT_BASE=N; this run: $base)"
# shellcheck source=bench/run_servers.sh
source bench/run_servers.sh
run_pid=""  # the run going on, if any: stopped by its pid when this script ends early
# shellcheck disable=SC2317 # run by the EXIT trap
on_exit() {
  if [[ -n $run_pid ]]; then
    kill "$run_pid" 2>/dev/null || true  # its leader processes die with it (PDEATHSIG)
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
    echo "election: configuring Release in $build"
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_TESTS=OFF \
          -DREDLOCK_BUILD_CLI=OFF -DREDLOCK_BUILD_EXAMPLES=OFF >/dev/null
  fi
  grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build/CMakeCache.txt" ||
    echo "election: warning: $build is not a Release build" >&2
  echo "election: building redlock_election_bench in $build"
  cmake --build "$build" -j"${REDLOCK_BENCH_JOBS:-$(nproc)}" --target redlock_election_bench \
    >"$results/build.log"
fi
[[ -x $binary ]] || { echo "election: $binary is not built" >&2; exit 69; }

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
  "lock": { "ttl_ms": $ttl, "min_validity_ms": 1, "auto_renew": false, "fencing": false },
  "retry": { "attempts": 3, "delay_ms": 200, "jitter_ms": 100 },
  "reconnect": { "min_delay_ms": 50, "max_delay_ms": 2000 }
}
EOF

# shellcheck disable=SC2086 # a list of ports
servers_start $ports
echo "election: 5 masters on 127.0.0.1:$base-$((base + 4)), results in $results"
load_start=$(cut -d' ' -f1 /proc/loadavg)
failed=0
one_run() {  # OUT LOG ARGS...: one run of the binary (or of a command wrapping it)
  local out=$1 log=$2 status=0; shift 2
  # In the background, waited for: a signal to this script is acted on at once.
  timeout 600 "$@" >"$out" 2>"$log" &
  run_pid=$!
  wait "$run_pid" || status=$?
  run_pid=""
  return "$status"
}
if ! one_run "$results/run.json" "$results/run.log" "$binary" --config "$config" \
     --ttl-ms "$ttl" --trials "$trials" --iterations "$iterations" --max-seconds 300; then
  failed=1
  echo "election: the run failed; the end of its log:" >&2
  tail -5 "$results/run.log" >&2
fi
grep '^election_bench: ' "$results/run.log" | tail -3 || true

# Instructions per cycle: each kind alone for SMALL and BIG cycles, the difference per cycle.
: >"$results/callgrind.jsonl"
if [[ $callgrind == 1 ]]; then
  small=20 big=120
  # Under valgrind the client runs some 50x slower: timeouts to match (request_timeout < TTL).
  sed -e 's/"connect_timeout_ms": 200/"connect_timeout_ms": 2000/' \
      -e "s/\"request_timeout_ms\": 50/\"request_timeout_ms\": $((ttl / 2))/" \
      "$config" >"$results/five-callgrind.json"
  for kind in campaign by-hand fenced plain; do
    for n in $small $big; do
      one_run /dev/null "$results/callgrind-$kind-$n.log" valgrind --tool=callgrind \
        --callgrind-out-file="$results/callgrind-$kind-$n.out" "$binary" \
        --config "$results/five-callgrind.json" \
        --ttl-ms "$ttl" --no-failover --only "$kind" --iterations "$n" --warmup 0 \
        || { echo "election: callgrind $kind $n failed" >&2; continue 2; }
    done
    ir_small=$(awk '/^totals:/ {print $2}' "$results/callgrind-$kind-$small.out")
    ir_big=$(awk '/^totals:/ {print $2}' "$results/callgrind-$kind-$big.out")
    echo "{\"kind\": \"$kind\", \"ir_per_cycle\": $(((ir_big - ir_small) / (big - small)))}" \
      >>"$results/callgrind.jsonl"
  done
fi
servers_stop

python3 bench/election_table.py "$results/run.json" "$results/table.md" \
  --callgrind "$results/callgrind.jsonl" --smoke "$smoke" --command "$invocation" \
  --load-start "$load_start" || failed=1
cat "$results/table.md"
if [[ $write_docs == 1 ]]; then
  if [[ $failed == 1 ]]; then
    echo "election: a run failed: docs/benchmarks.md left as it was" >&2
  else
    python3 bench/election_table.py --write-docs "$results/table.md" \
      docs/benchmarks.md bench/benchmarks.md.in
    echo "election: section 'Leader election: failover and overhead' written to" \
         "docs/benchmarks.md and bench/benchmarks.md.in"
  fi
fi
echo "election: done in $SECONDS s; table: $results/table.md"
exit "$failed"
