#!/usr/bin/env bash
# The benchmark matrix behind docs/benchmarks.md, in one command:
#
#   bench/run.sh            # about 8 minutes; rewrites docs/benchmarks.md and docs/benchmarks/
#   bench/run.sh --quick    # about 3 minutes, shorter phases; writes to build/ only, not docs/
#   bench/run.sh --kinds    # about 1 minute: only the lock-kind phases (readers, read-write
#                           # mix, semaphore), rendered with the rest of docs/benchmarks/results
#                           # (the last full run) into docs/benchmarks.md
#
# It installs what is missing (scripts/install-deps.sh, plus valgrind for the
# instruction counts), builds Release in build/bench-release, starts local
# masters (configs/local.json: 5 nodes on 7001-7005; bench/configs/three.json
# and seven.json on 7101-7103 and 7201-7207), runs the micro benchmarks, the
# load matrix (library beside the raw ceiling, same process, alternating),
# callgrind on both, and renders the report. The masters it started are
# stopped by pid when it ends. Every load phase is bounded by --duration-s and
# --ops, and every redlock_load gives up 30 s past its deadline.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

quick=0
kinds_only=0
case ${1:-} in
  --quick) quick=1 ;;
  --kinds) kinds_only=1 ;;
  "") ;;
  *) echo "usage: $0 [--quick | --kinds]" >&2; exit 64 ;;
esac

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

scripts/install-deps.sh
if [[ $kinds_only == 0 ]] && ! command -v valgrind >/dev/null; then
  echo "bench: installing valgrind (instruction counts per lock cycle)"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends valgrind >/dev/null
fi

started=$(date +%s)
build=${REDLOCK_BENCH_BUILD:-build/bench-release}  # another Release tree may be named
echo "bench: building Release in $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_TESTS=OFF \
      -DREDLOCK_BUILD_CLI=OFF -DREDLOCK_BUILD_EXAMPLES=OFF >/dev/null
targets=(redlock_load redlock_bench_report)
[[ $kinds_only == 0 ]] && targets+=(redlock_micro_bench)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null

stamp=$(date -u +%Y%m%dT%H%M%SZ)
results=$build/results/$stamp
mkdir -p "$results"
load=$build/bench/redlock_load

# Phases: seconds per measured phase and repetitions (modes alternate ABBA).
if [[ $quick == 1 ]]; then secs=1; reps=2; cg_small=300; cg_big=600; contended_secs=2
else secs=2; reps=3; cg_small=1000; cg_big=2000; contended_secs=5; fi

clusters=()
stop_clusters() {
  for c in "${clusters[@]}"; do scripts/local-cluster.sh stop "$c" || true; done
  clusters=()
}
trap stop_clusters EXIT
cluster_start() {
  clusters+=("$1")
  # A second try: local-cluster.sh can exit early (and silently) while a
  # server is still binding its port; the servers it started are kept.
  local attempt
  for attempt in 1 2 3; do
    scripts/local-cluster.sh start "$1" && return 0
    sleep 0.5
  done
  echo "bench: could not start the masters of $1" >&2
  exit 69
}

# run LABEL ARGS...: one redlock_load invocation, its JSON in $results/LABEL.json.
run() {
  local label=$1; shift
  "$load" --label "$label" --json "$results/$label.json" "$@"
}

# The lock kinds, on the 5 nodes of $five (started).
kind_phases() {
  echo "bench: lock kinds (readers, read-write mix, semaphore)"
  # Readers beside exclusive locks at 64 in flight, same process, alternating:
  # exclusive on distinct resources, readers on distinct resources, readers
  # all on one resource.
  run readers-c64 --config "$five" --mode readers --concurrency 64 --duration-s "$secs" \
    --repeat "$reps"
  # 16 readers and 2 writers on one resource, waiting with max_wait.
  run rw-r16-w2 --config "$five" --contended --readers 16 --writers 2 --hold-ms 5 \
    --max-wait-ms 2000 --duration-s "$contended_secs" --warmup-ops 50
  # A semaphore of 4 permits, 16 workers, waiting with max_wait.
  run sem-k4-w16 --config "$five" --contended --workers 16 --permits 4 --hold-ms 5 \
    --max-wait-ms 2000 --duration-s "$contended_secs" --warmup-ops 50
}

five=configs/local.json
if [[ $kinds_only == 1 ]]; then
  cluster_start "$five"
  kind_phases
  stop_clusters
  # Everything else as the last full run measured it (its meta.json included).
  for f in docs/benchmarks/results/*; do
    [[ -e $results/$(basename "$f") ]] || cp "$f" "$results/"
  done
  mkdir -p docs/benchmarks/results
  cp "$results"/{readers-c64,rw-r16-w2,sem-k4-w16}.json docs/benchmarks/results/
  "$build/bench/redlock_bench_report" "$results" bench/benchmarks.md.in docs/benchmarks.md \
    docs/benchmarks
  echo "bench: lock kinds done in $(( $(date +%s) - started )) s; report: docs/benchmarks.md"
  exit 0
fi

echo "bench: micro benchmarks"
"$build/bench/redlock_micro_bench" --benchmark_min_time=0.2 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_out="$results/micro.json" \
  --benchmark_out_format=json >/dev/null

cluster_start "$five"

echo "bench: uncontended, 5 nodes (library beside the raw ceiling)"
for c in 1 16 64 256 1024; do
  mode=both
  [[ $c == 1 || $c == 64 ]] && mode=all  # plus hiredis's async API, for reference
  run "c$c" --config "$five" --mode "$mode" --concurrency "$c" --duration-s "$secs" --repeat "$reps"
done

echo "bench: client memory (one mode per process)"
run mem-lib-c1 --config "$five" --mode lib --concurrency 1 --duration-s "$secs" --heap-bytes
run mem-lib-c1024 --config "$five" --mode lib --concurrency 1024 --duration-s "$secs" --heap-bytes
run mem-raw-c1024 --config "$five" --mode raw --concurrency 1024 --duration-s "$secs" --heap-bytes

echo "bench: fencing and extend"
for c in 1 64; do
  run "fencing-c$c" --config "$five" --mode both --fencing --concurrency "$c" \
    --duration-s "$secs" --repeat "$reps"
  run "extend-c$c" --config "$five" --mode both --extend --concurrency "$c" \
    --duration-s "$secs" --repeat "$reps"
done

echo "bench: contended (workers on one resource)"
for w in 4 16; do  # the config's retry policy (attempts, delay + jitter)
  run "contended-w$w" --config "$five" --contended --workers "$w" --hold-ms 5 \
    --duration-s "$contended_secs" --warmup-ops 50
done
# lock_options.max_wait: keep trying until the deadline.
run contended-w16-wait --config "$five" --contended --workers 16 --hold-ms 5 --max-wait-ms 2000 \
  --duration-s "$contended_secs" --warmup-ops 50

kind_phases

echo "bench: instructions per cycle (callgrind, 1 in flight, $cg_small and $cg_big cycles)"
cg_args=(--config "$five" --concurrency 1 --duration-s 600 --warmup-ops 100 --warmup-s 600
         --sample-ms 0 --progress never)
total_ir() { awk '/^totals:/ {print $2}' "$1"; }
# Per-function instructions per cycle: the difference of the two runs, so
# start-up and shutdown cancel out.
per_function() {
  local small=$1 big=$2 cycles=$3 inclusive=$4
  annotate() {
    callgrind_annotate --inclusive="$inclusive" --threshold=100 "$1" 2>/dev/null |
      awk '/^ *[0-9,]+ +\(/ {ir=$1; gsub(",", "", ir); line=$0;
           sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", line); print ir "\t" line}'
  }
  awk -F'\t' -v n="$cycles" 'NR == FNR {a[$2] = $1; next}
       {d = ($1 - a[$2]) / n; if (d >= 20) printf "%.0f\t%s\n", d, $2}' \
    <(annotate "$small") <(annotate "$big") | sort -t$'\t' -k1,1 -rn | head -150
}
# Allocations per cycle by call site: callers of the interposed allocation
# functions, with their call counts, again as the difference of the two runs.
alloc_sites() {
  callgrind_annotate --tree=caller --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk '
      /^$/ { n = 0; next }
      / < / { callers[++n] = $0; next }
      /\*  .*:(malloc|calloc|realloc|operator new(\[\])?\(unsigned long\)) \[.*redlock_load\]/ {
        fn = $0; sub(/^.*\*  [^:]*:/, "", fn); sub(/ \[.*$/, "", fn)
        for (i = 1; i <= n; i++) {
          line = callers[i]
          if (!match(line, / \([0-9,]+x\) \[/)) continue
          count = substr(line, RSTART + 2, RLENGTH - 5); gsub(/[,x]/, "", count)
          name = substr(line, 1, RSTART - 1); sub(/^.*< /, "", name)
          print count "\t" name " " substr(line, RSTART + RLENGTH - 1) "\t" fn
        }
      }'
}
per_cycle_allocs() {
  awk -F'\t' -v n="$3" 'NR == FNR {a[$2 "\t" $3] = $1; next}
       {d = ($1 - a[$2 "\t" $3]) / n; if (d >= 0.05) printf "%.2f\t%s\t%s\n", d, $2, $3}' \
    <(alloc_sites "$1") <(alloc_sites "$2") | sort -t$'\t' -k1,1 -rn
}
declare -A ir
# raw_resp: the raw client with the library's RESP encoder instead of hiredis's
# formatter, a like-for-like reference beside the ceiling as defined.
for mode in lib raw raw_resp; do
  for n in "$cg_small" "$cg_big"; do
    out=$results/callgrind-$mode-$n.out
    mode_args=(--mode "$mode")
    [[ $mode == raw_resp ]] && mode_args=(--mode raw --raw-encoder library)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$load" "${cg_args[@]}" "${mode_args[@]}" \
      --ops "$n" >/dev/null 2>"$results/callgrind-$mode-$n.log"
    ir[$mode-$n]=$(total_ir "$out")
  done
  [[ $mode == raw_resp ]] && continue  # the totals are what it is for
  for inclusive in no yes; do
    suffix=; [[ $inclusive == yes ]] && suffix=-inclusive
    per_function "$results/callgrind-$mode-$cg_small.out" "$results/callgrind-$mode-$cg_big.out" \
      $((cg_big - cg_small)) "$inclusive" >"$results/callgrind-$mode$suffix.tsv"
  done
  per_cycle_allocs "$results/callgrind-$mode-$cg_small.out" "$results/callgrind-$mode-$cg_big.out" \
    $((cg_big - cg_small)) >"$results/callgrind-$mode-allocs.tsv"
done
per_cycle() { echo $(( (ir[$1-$cg_big] - ir[$1-$cg_small]) / (cg_big - cg_small) )); }
cat >"$results/callgrind.json" <<EOF
{
  "small": $cg_small, "big": $cg_big,
  "command": "valgrind --tool=callgrind $load ${cg_args[*]} --mode lib|raw --ops $cg_small|$cg_big",
  "lib": {"ir_small": ${ir[lib-$cg_small]}, "ir_big": ${ir[lib-$cg_big]}, "per_cycle": $(per_cycle lib)},
  "raw": {"ir_small": ${ir[raw-$cg_small]}, "ir_big": ${ir[raw-$cg_big]}, "per_cycle": $(per_cycle raw)},
  "raw_resp": {"ir_small": ${ir[raw_resp-$cg_small]}, "ir_big": ${ir[raw_resp-$cg_big]}, "per_cycle": $(per_cycle raw_resp)}
}
EOF
stop_clusters

echo "bench: 3 and 7 nodes"
for spec in 3:bench/configs/three.json 7:bench/configs/seven.json; do
  n=${spec%%:*}
  config=${spec#*:}
  cluster_start "$config"
  for c in 1 64; do
    run "n$n-c$c" --config "$config" --mode both --concurrency "$c" --duration-s "$secs" \
      --repeat "$reps"
  done
  stop_clusters
done

json_string() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
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
  "duration": $(json_string "$(( ($(date +%s) - started) / 60 )) min $(( ($(date +%s) - started) % 60 )) s")
}
EOF

if [[ $quick == 1 ]]; then
  doc=$results/benchmarks.md
  svg=$results
else
  doc=docs/benchmarks.md
  svg=docs/benchmarks
  mkdir -p "$svg/results"
  rm -f "$svg"/results/*.json "$svg"/results/*.tsv
  cp "$results"/*.json "$results"/*.tsv "$svg/results/"
fi
"$build/bench/redlock_bench_report" "$results" bench/benchmarks.md.in "$doc" "$svg"
echo "bench: done in $(( $(date +%s) - started )) s; report: $doc (raw results: $results)"
