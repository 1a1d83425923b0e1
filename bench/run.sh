#!/usr/bin/env bash
# The benchmark matrix behind docs/benchmarks.md, in one command:
#
#   bench/run.sh               # about 5 minutes: the whole matrix
#   bench/run.sh --quick       # under 1 minute once built: library beside the raw ceiling at
#                              # 1 to 1024 in flight, 16 contended workers, callgrind totals
#   bench/run.sh --kinds       # about 1 minute: only the lock-kind phases (readers, read-write
#                              # mix, semaphore), rendered beside the rest of the last full
#                              # run (docs/benchmarks/results)
#   bench/run.sh --write-docs  # the whole matrix, and the report replaces docs/benchmarks.md
#                              # and docs/benchmarks/ (also with --kinds; never with --quick)
#
# Options:
#   --base-port N   the masters listen on 127.0.0.1 ports N to N+6 (5 nodes on N..N+4, then
#                   3 and 7 nodes from N); default 7401, or $REDLOCK_BENCH_PORT_BASE. Clear of
#                   the demo's 7001-7005 (scripts/demo.sh, .run/), bench/tls.sh's 7301-7313 and
#                   the test suite's kernel-chosen ports. A port in use stops the run before
#                   anything is measured, naming the port.
#   --dry-run       print the phases, ports and output paths, and stop: builds and starts nothing
#   --smoke         one short phase (1 in flight), for the harness's own check
#                   (bench/run_test.sh); with --no-build
#   --no-build      use the binaries already in the build directory; install nothing
#   --help          this text
# Environment: REDLOCK_BENCH_BUILD names the build directory (default build/bench-release).
#
# Without --write-docs it writes under the build directory only: the report, its SVG plots and
# every phase's raw JSON and log in BUILD/results/<UTC time>/, its generated configs and its
# masters' pid files, logs and data in BUILD/bench-run/. The console gets one line per phase
# (its name, k of n, and a summary); errors go to stderr. The last line says where the report is.
#
# It installs what is missing (scripts/install-deps.sh, plus valgrind for the instruction
# counts), builds Release, starts masters of its own (redis-server in memory, on the ports
# above), runs the micro benchmarks, the load matrix (library beside the raw ceiling, same
# process, alternating), callgrind on both, and renders the report. The masters it started,
# and only those, are stopped by pid when it ends, however it ends. Every load phase is
# bounded by --duration-s and --ops.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

fail() { echo "bench: $*" >&2; exit 64; }
mode=full write_docs=0 dry_run=0 build_step=1
base=${REDLOCK_BENCH_PORT_BASE:-7401}
set_mode() { [[ $mode == full ]] || fail "--$mode and --$1 are separate runs"; mode=$1; }
while (($#)); do
  case $1 in
    --quick | --kinds | --smoke) set_mode "${1#--}" ;;
    --write-docs) write_docs=1 ;;
    --dry-run) dry_run=1 ;;
    --no-build) build_step=0 ;;
    --base-port) (($# > 1)) || fail "--base-port needs a port"; base=$2; shift ;;
    --base-port=*) base=${1#*=} ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0"; exit 0 ;;
    *) fail "unknown argument '$1' (bench/run.sh --help lists them)" ;;
  esac
  shift
done
if ! [[ $base =~ ^[1-9][0-9]{3,4}$ ]] || ((base < 1024 || base + 6 > 65535)); then
  fail "--base-port (or REDLOCK_BENCH_PORT_BASE) must be a port from 1024 to 65529, not '$base'"
fi
[[ $write_docs == 1 && ($mode == quick || $mode == smoke) ]] &&
  fail "--write-docs publishes a full run or --kinds, not --$mode"
[[ $mode == smoke && $build_step == 1 ]] && fail "--smoke goes with --no-build"
knob="--base-port N (or REDLOCK_BENCH_PORT_BASE=N; this run: $base)"

build=${REDLOCK_BENCH_BUILD:-build/bench-release}
load=$build/bench/redlock_load
work=$build/bench-run  # generated configs, the masters' pid files, logs and data
stamp=$(date -u +%Y%m%dT%H%M%SZ)
results=$build/results/$stamp
[[ -e $results ]] && results+=-$$
if [[ $write_docs == 1 ]]; then report=docs/benchmarks.md svg=docs/benchmarks
else report=$results/benchmarks.md svg=$results; fi

# Seconds per measured phase, repetitions (modes alternate ABBA), callgrind's cycles.
case $mode in
  full | kinds) secs=2 reps=3 cg_small=1000 cg_big=2000 contended_secs=5 ;;
  quick) secs=1 reps=2 cg_small=300 cg_big=600 contended_secs=2 ;;
  smoke) secs=0.2 reps=1 ;;
esac
five=$work/configs/five.json three=$work/configs/three.json seven=$work/configs/seven.json
ports() { seq "$base" $((base + $1 - 1)); }
nports=5; [[ $mode == full ]] && nports=7
wanted=$(ports "$nports")

# The plan, walked twice: first counting its phases (nothing runs), then running them.
# phase LABEL COMMAND...: one phase; its stdout goes to RESULTS/LABEL.log, its JSON stays in
# RESULTS, and the console gets one line. masters N: N masters of this run's own up (none: down).
counting=1 plan=() k=0 current=""
phase() {
  local label=$1 t0=$SECONDS; shift
  if [[ $counting == 1 ]]; then plan+=("$label"); return 0; fi
  k=$((k + 1))
  current="[$k/${#plan[@]}] $label"
  "$@" >"$results/$label.log"
  local summary="written to $report"
  [[ $label == report ]] || summary=$(python3 bench/run_summary.py "$results" "$label")
  printf 'bench: %-28s %4s  %s\n' "$current" "$((SECONDS - t0)) s" "$summary"
  current=""
}
masters() {
  [[ $counting == 1 ]] && return 0
  servers_stop
  if [[ $1 != none ]]; then
    # shellcheck disable=SC2046 # a list of ports
    servers_start $(ports "$1")
  fi
}
load_run() {  # LABEL ARGS...: one redlock_load run, its JSON in RESULTS/LABEL.json
  local label=$1; shift
  "$load" --label "$label" --json "$results/$label.json" --progress never "$@"
}
uncontended() {  # LABEL CONFIG MODE CONCURRENCY [ARGS...]
  local label=$1 config=$2 m=$3 c=$4; shift 4
  phase "$label" load_run "$label" --config "$config" --mode "$m" --concurrency "$c" \
    --duration-s "$secs" --repeat "$reps" "$@"
}
contended() {  # LABEL ARGS...: workers on one resource, with the library only
  local label=$1; shift
  phase "$label" load_run "$label" --config "$five" --contended --hold-ms 5 \
    --duration-s "$contended_secs" --warmup-ops 50 "$@"
}

micro_run() {  # its context lines (CPU, caches) on stderr go to its log too
  "$build/bench/redlock_micro_bench" --benchmark_min_time=0.2 --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_out="$results/micro.json" \
    --benchmark_out_format=json 2>&1
}

# The lock kinds, on 5 masters.
kind_phases() {
  # Readers beside exclusive locks at 64 in flight, same process, alternating: exclusive on
  # distinct resources, readers on distinct resources, readers all on one resource.
  uncontended readers-c64 "$five" readers 64
  # 16 readers and 2 writers on one resource, waiting with max_wait.
  contended rw-r16-w2 --readers 16 --writers 2 --max-wait-ms 2000
  # A semaphore of 4 permits, 16 workers, waiting with max_wait.
  contended sem-k4-w16 --workers 16 --permits 4 --max-wait-ms 2000
}

full_matrix() {
  phase micro micro_run
  masters 5
  local c m
  for c in 1 16 64 256 1024; do  # at 1 and 64 plus hiredis's async API, for reference
    m=both; [[ $c == 1 || $c == 64 ]] && m=all
    uncontended "c$c" "$five" "$m" "$c"
  done
  # Client memory, one mode per process.
  phase mem-lib-c1 load_run mem-lib-c1 --config "$five" --mode lib --concurrency 1 \
    --duration-s "$secs" --heap-bytes
  phase mem-lib-c1024 load_run mem-lib-c1024 --config "$five" --mode lib --concurrency 1024 \
    --duration-s "$secs" --heap-bytes
  phase mem-raw-c1024 load_run mem-raw-c1024 --config "$five" --mode raw --concurrency 1024 \
    --duration-s "$secs" --heap-bytes
  for c in 1 64; do
    uncontended "fencing-c$c" "$five" both "$c" --fencing
    uncontended "extend-c$c" "$five" both "$c" --extend
  done
  for c in 4 16; do contended "contended-w$c" --workers "$c"; done  # the config's retry policy
  contended contended-w16-wait --workers 16 --max-wait-ms 2000  # keep trying until max_wait
  kind_phases
  phase callgrind callgrind_phase "$cg_small" "$cg_big" "lib raw raw_resp" 1
  masters 3
  for c in 1 64; do uncontended "n3-c$c" "$three" both "$c"; done
  masters 7
  for c in 1 64; do uncontended "n7-c$c" "$seven" both "$c"; done
  masters none
}

# A quick look: the library beside the raw ceiling from 1 to 1024 in flight, 16 contended
# workers, and instructions per cycle (totals only), on 5 masters.
quick_matrix() {
  masters 5
  local c
  for c in 1 16 64 256 1024; do uncontended "c$c" "$five" both "$c"; done
  contended contended-w16-wait --workers 16 --max-wait-ms 2000
  phase callgrind callgrind_phase "$cg_small" "$cg_big" "lib raw" 0
  masters none
}

smoke_matrix() {
  masters 5
  uncontended c1 "$five" both 1 --warmup-ops 100
  masters none
}

kinds_matrix() {
  masters 5
  kind_phases
  masters none
}

matrix() {
  "${mode}_matrix"
  phase report render_report
}

render_report() {
  if [[ $mode == kinds ]]; then
    # Everything else as the last full run measured it (its meta.json included).
    local f
    for f in docs/benchmarks/results/*; do
      [[ -e $results/$(basename "$f") ]] || cp "$f" "$results/"
    done
  else
    write_meta
  fi
  if [[ $write_docs == 1 ]]; then
    mkdir -p "$svg/results"
    if [[ $mode == kinds ]]; then
      cp "$results"/{readers-c64,rw-r16-w2,sem-k4-w16}.json "$svg/results/"
    else
      rm -f "$svg"/results/*.json "$svg"/results/*.tsv
      cp "$results"/*.json "$results"/*.tsv "$svg/results/"
    fi
  fi
  "$build/bench/redlock_bench_report" "$results" bench/benchmarks.md.in "$report" "$svg"
}

json_string() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
write_meta() {
  cat >"$results/meta.json" <<EOF
{
  "date": $(json_string "$(date -u '+%Y-%m-%d %H:%M UTC')"),
  "machine": $(json_string "$(uname -srm)"),
  "cpu": $(json_string "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"),
  "cores": $(json_string "$(nproc)"),
  "memory": $(json_string "$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"),
  "kernel": $(json_string "$(uname -r)"),
  "compiler": $(json_string "$(c++ --version | head -1)"),
  "redis_version": $(json_string "$(redis-server --version | awk '{print $3}' | sed 's/v=//')"),
  "commit": $(json_string "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"),
  "run": $(json_string "$mode"),
  "duration": $(json_string "$(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s")
}
EOF
}

matrix
counting=0
echo "bench: $mode run, ${#plan[@]} phases, masters on 127.0.0.1:$base-$((base + nports - 1))" \
     "(--base-port), results in $results"
if [[ $dry_run == 1 ]]; then
  for ((i = 0; i < ${#plan[@]}; i++)); do echo "bench: [$((i + 1))/${#plan[@]}] ${plan[$i]}"; done
  echo "bench: dry run; the report would be written to $report"
  exit 0
fi

if [[ $build_step == 1 ]]; then
  scripts/install-deps.sh
  if [[ $mode != kinds ]] && ! command -v valgrind >/dev/null; then
    echo "bench: installing valgrind (instruction counts per lock cycle)"
    as_root=(); [[ $(id -u) -eq 0 ]] || as_root=(sudo)
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq \
      --no-install-recommends valgrind >/dev/null
  fi
fi
for tool in redis-server redis-cli python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is not installed" >&2; exit 69; }
done

# One run per build directory at a time; the lock goes with this shell (fd 9).
mkdir -p "$work/configs"
exec 9>"$work/lock"
flock -n 9 || { echo "bench: another bench/run.sh is running in $build" >&2; exit 75; }
# Absolute: redis-server changes to its --dir before it opens its --logfile.
servers_dir=$(realpath "$work")/servers servers_knob=$knob
# shellcheck source=bench/run_servers.sh
source bench/run_servers.sh
# shellcheck source=bench/run_callgrind.sh
source bench/run_callgrind.sh
on_exit() {
  local status=$?
  servers_stop
  if [[ $status != 0 && -n $current ]]; then
    local log=$results/${current##* }.log
    echo "bench: $current failed (exit $status); the end of its output ($log):" >&2
    tail -20 "$log" >&2
  fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# shellcheck disable=SC2086 # a list of ports
servers_check_free $wanted
mkdir -p "$results"

# The configs of this run's masters: 3, 5 and 7 nodes from the base port.
write_config() {  # FILE COUNT
  local nodes="" port
  for port in $(ports "$2"); do
    nodes+="${nodes:+,$'\n'}    { \"host\": \"127.0.0.1\", \"port\": $port }"
  done
  cat >"$1" <<EOF
{
  "nodes": [
$nodes
  ],
  "key_prefix": "redlock:",
  "connect_timeout_ms": 200,
  "request_timeout_ms": 50,
  "clock_drift_factor": 0.01,
  "clock_drift_floor_ms": 2,
  "lock": { "ttl_ms": 10000, "min_validity_ms": 1, "auto_renew": false, "fencing": false },
  "retry": { "attempts": 3, "delay_ms": 200, "jitter_ms": 100 },
  "reconnect": { "min_delay_ms": 50, "max_delay_ms": 2000 }
}
EOF
}
write_config "$three" 3
write_config "$five" 5
write_config "$seven" 7

if [[ $build_step == 1 ]]; then
  echo "bench: building Release in $build"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_TESTS=OFF \
        -DREDLOCK_BUILD_CLI=OFF -DREDLOCK_BUILD_EXAMPLES=OFF >/dev/null
  targets=(redlock_load redlock_bench_report)
  [[ $mode == full ]] && targets+=(redlock_micro_bench)
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null
fi
for binary in "$load" "$build/bench/redlock_bench_report"; do
  [[ -x $binary ]] || { echo "bench: $binary is not built" >&2; exit 69; }
done

started=$SECONDS
matrix
echo "bench: done in $SECONDS s; report: $report (raw JSON and logs: $results)"
