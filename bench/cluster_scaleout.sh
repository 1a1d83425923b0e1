#!/usr/bin/env bash
# Scale-out over cluster members (docs/benchmarks.md, "Scale-out over cluster
# members"), reproduced on this machine in one command:
#
#   bench/cluster_scaleout.sh           # about 4 minutes
#   bench/cluster_scaleout.sh --quick   # about 2 minutes: 1 s phases, 2 repetitions,
#                                       # callgrind at 300 and 600 cycles, 2 pairs
#   bench/cluster_scaleout.sh --publish # the full run, its JSON and tables also copied to
#                                       # docs/benchmarks/scaleout/ (what docs/benchmarks.md
#                                       # quotes; re-render with bench/cluster_scaleout_report.py)
#
# On loopback, on free ports, in a temporary directory of its own, it starts 3
# standalone masters and, for S = 1, 2 and 3, three Redis Cluster members of S
# masters each (no replicas): 21 redis-server processes, every one stopped by
# its pid when the script ends, however it ends. It then measures, with
# build/bench-release/bench/redlock_load and the same many resources (so that
# the locks spread over a member's slots, hence its shards):
#   1. uncontended locks/s at 1 and 64 in flight (and 64 × S for S shards):
#      each cluster configuration in one process with the standalone members,
#      the two clients alternating over 3 repetitions each; the standalone
#      members also beside the raw hiredis client;
#   2. the commands each shard served, and 3. each shard's CPU per lock, from
#      every node's INFO commandstats and INFO cpu around the measured phases
#      (redlock_load --stats-config names every cluster node);
#   4. the client's instructions per lock (callgrind: (Ir at 2N cycles − Ir at
#      N cycles) / N, 1 in flight, the median of 5 pairs) with standalone,
#      1-shard and 3-shard members.
# bench/cluster_scaleout_report.py turns the JSON into the tables; they are
# printed and kept with the raw results under build/bench-release/results/.
# Every loop here is bounded in count and time, and every redlock_load phase by
# --duration-s and --ops (it gives up 30 s past its deadline).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

quick=0
publish=0
case ${1:-} in
  --quick) quick=1 ;;
  --publish) publish=1 ;;
  "") ;;
  *) echo "usage: $0 [--quick | --publish]" >&2; exit 64 ;;
esac
if [[ $quick == 1 ]]; then secs=1; reps=2; cg_small=300; cg_big=600; cg_pairs=2
else secs=2; reps=3; cg_small=1000; cg_big=2000; cg_pairs=5; fi
# Resources the chains take in turn: a multiple of 64 (each of 64 chains gets
# 100), and enough that the slots' share per shard is within about 2 % of 1/S.
resources=6400

for tool in redis-server redis-cli valgrind callgrind_annotate python3 cmake; do
  command -v "$tool" >/dev/null || { echo "scaleout: $tool is not installed" >&2; exit 69; }
done

started=$(date +%s)
load_before=$(cut -d' ' -f1 /proc/loadavg)
build=${REDLOCK_BENCH_BUILD:-build/bench-release}
if [[ ! -f $build/build.ninja && ! -f $build/Makefile ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
fi
echo "scaleout: building redlock_load in $build"
cmake --build "$build" -j2 --target redlock_load >/dev/null
load=$build/bench/redlock_load

stamp=$(date -u +%Y%m%dT%H%M%SZ)
results=$root/$build/results/scaleout-$stamp
mkdir -p "$results"
work=$(mktemp -d /tmp/redlock-scaleout.XXXXXX)
pids=()
stop_servers() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
  done
  pids=()
  rm -rf "$work"
}
trap stop_servers EXIT
trap 'exit 130' INT TERM

# pick_port: sets `port` to one that nothing listens on, whose cluster bus port
# (port + 10000) is free too; both below the ephemeral range (32768), so that no
# client socket takes them meanwhile. (No command substitution here or below:
# the pids must reach this shell's `pids`.)
used_ports=" "
pick_port() {
  local p listening
  listening=" $(ss -Htln 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}' | sort -u |
                tr '\n' ' ') "
  for _ in $(seq 200); do
    p=$(( 12000 + RANDOM % 10000 ))
    [[ $listening$used_ports == *" $p "* || $listening == *" $((p + 10000)) "* ]] && continue
    used_ports+="$p "
    port=$p
    return 0
  done
  echo "scaleout: no free port found" >&2
  return 1
}

# start_node PORT [cluster]: a redis-server in memory, up once it answers with its own pid.
start_node() {
  local dir=$work/$1 pid answering
  mkdir -p "$dir"
  local args=(--port "$1" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir"
              --logfile "$dir/redis.log")
  if [[ ${2:-} == cluster ]]; then
    args+=(--cluster-enabled yes --cluster-config-file "$dir/nodes.conf"
           --cluster-node-timeout 5000)
  fi
  redis-server "${args[@]}" >/dev/null 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do  # at most 5 s
    answering=$(redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' |
                sed -n 's/^process_id://p' || true)
    [[ $answering == "$pid" ]] && return 0
    kill -0 "$pid" 2>/dev/null || return 1  # the port was taken after all
    sleep 0.05
  done
  return 1
}

# new_node [cluster]: starts a node on a free port (three tries); its port in `port`.
new_node() {
  for _ in 1 2 3; do
    pick_port
    if start_node "$port" "$@"; then return 0; fi
  done
  echo "scaleout: could not start a redis-server; see $work/*/redis.log" >&2
  return 1
}

# make_cluster PORT...: one cluster of these masters, the slots split evenly in
# order (as redis-cli --cluster create splits them), up once every node says
# cluster_state:ok and knows every master. redis-cli --cluster create refuses
# fewer than 3 masters, so the slots are assigned by hand for every S alike.
make_cluster() {
  local ports=("$@") s=${#@} i first last state known ok
  for i in "${!ports[@]}"; do
    first=$(( i * 16384 / s ))
    last=$(( (i + 1) * 16384 / s - 1 ))
    redis-cli -p "${ports[$i]}" cluster addslotsrange "$first" "$last" >/dev/null
    if ((i > 0)); then redis-cli -p "${ports[$i]}" cluster meet 127.0.0.1 "${ports[0]}" >/dev/null; fi
  done
  for _ in $(seq 200); do  # at most 10 s
    ok=1
    for i in "${ports[@]}"; do
      state=$(redis-cli -p "$i" cluster info | tr -d '\r')
      known=$(sed -n 's/^cluster_size://p' <<<"$state")
      [[ $state == *cluster_state:ok* && $known == "$s" ]] || { ok=0; break; }
    done
    [[ $ok == 1 ]] && return 0
    sleep 0.05
  done
  echo "scaleout: a cluster of ${ports[*]} did not reach cluster_state:ok" >&2
  return 1
}

json_nodes() {  # "port port ..." -> [{"host": ..., "port": ...}, ...]
  local out="" p
  for p in $1; do out+="${out:+, }{\"host\": \"127.0.0.1\", \"port\": $p}"; done
  echo "[$out]"
}

# cluster_config FILE EXTRA MEMBER...: the members, each named by all its nodes as seeds.
cluster_config() {
  local file=$1 extra=$2 m
  shift 2
  {
    echo '{"clusters": ['
    for ((m = 1; m <= $#; m++)); do
      echo "  {\"seeds\": ${!m}$extra}$( ((m < $#)) && echo ,)"
    done
    echo '], "lock": {"ttl_ms": 10000}}'
  } >"$file"
}

echo "scaleout: starting 3 standalone masters and 3 cluster members of 1, 2 and 3 shards"
standalone=""
for _ in 1 2 3; do
  new_node
  standalone+="$port "
done
echo "{\"nodes\": $(json_nodes "$standalone"), \"lock\": {\"ttl_ms\": 10000}}" \
  >"$results/standalone.json"
cp "$results/standalone.json" "$results/standalone-stats.json"
cp "$results/standalone.json" "$results/standalone-callgrind.json"
for s in 1 2 3; do
  members=() all=""
  for _ in 1 2 3; do
    ports=()
    for _ in $(seq "$s"); do
      new_node cluster
      ports+=("$port")
    done
    make_cluster "${ports[@]}"
    members+=("$(json_nodes "${ports[*]}")")
    all+="${ports[*]} "
  done
  cluster_config "$results/cluster$s.json" "" "${members[@]}"
  # For callgrind: no periodic slot-map refresh among the measured cycles (one
  # per member every 10 s by default: a cost per second, not per lock).
  cluster_config "$results/cluster$s-callgrind.json" ', "refresh_ms": 3600000' "${members[@]}"
  # Every node of the members, and the standalone masters (the baseline).
  echo "{\"nodes\": $(json_nodes "$all$standalone")}" >"$results/cluster$s-stats.json"
  echo "$s $all" >>"$results/shards.txt"
done
echo "scaleout: nodes up (standalone: $standalone); $(( ${#pids[@]} )) redis-server processes"

# ---- 1-3: throughput, commands and CPU per shard -------------------------------------------
# Each cluster configuration runs in one process beside the standalone members
# (--baseline-config): the two clients alternate phase by phase (A B B A B A),
# so each ratio compares neighbours in time on this shared machine. The
# standalone members also run alone, the library beside the raw client. Then
# each S-shard member at 64 × S in flight, so that each shard sees about the 64
# locks in flight a standalone master sees (the projection's per-shard cost).
run_load() {  # run_load LABEL ARGS...
  local label=$1
  shift
  "$load" --resources "$resources" --duration-s "$secs" --repeat "$reps" --progress never \
    --label "$label" --json "$results/$label.json" "$@" | sed "s/^/  /"
}
echo "scaleout: throughput, $reps alternating repetitions of ${secs} s per configuration and depth"
for c in 1 64; do
  run_load "standalone-c$c" --config "$results/standalone.json" \
    --stats-config "$results/standalone-stats.json" --mode both --concurrency "$c"
  for s in 1 2 3; do
    run_load "cluster$s-c$c" --config "$results/cluster$s.json" \
      --baseline-config "$results/standalone.json" --stats-config "$results/cluster$s-stats.json" \
      --mode lib --concurrency "$c"
  done
done
for s in 2 3; do
  run_load "cluster$s-c$((64 * s))" --config "$results/cluster$s.json" \
    --stats-config "$results/cluster$s-stats.json" --mode lib --concurrency $((64 * s))
done

# ---- 4: client instructions per lock -------------------------------------------------------
# Each pair's difference still carries one-off costs that vary from run to run
# (under valgrind, libuv's loop thread may spin in sched_yield for a whole time
# slice while the main thread finishes a uv_async_send: up to ~1 M
# instructions, ~1000 per lock at these counts), so each configuration gets
# $cg_pairs pairs, interleaved, and the report takes the median.
echo "scaleout: instructions per lock (callgrind, 1 in flight, $cg_small and $cg_big cycles," \
     "$cg_pairs pairs each)"
total_ir() { awk '/^totals:/ {print $2}' "$1"; }
for pair in $(seq "$cg_pairs"); do
  for cfg in standalone cluster1 cluster3; do
    for n in "$cg_small" "$cg_big"; do
      out=$results/callgrind-$cfg-$n-p$pair.out
      valgrind --tool=callgrind --callgrind-out-file="$out" "$load" \
        --config "$results/$cfg-callgrind.json" --stats-config "$results/$cfg-stats.json" \
        --mode lib --concurrency 1 --resources "$resources" --duration-s 600 --warmup-ops 100 \
        --warmup-s 600 --sample-ms 0 --progress never --ops "$n" \
        >/dev/null 2>"$results/callgrind-$cfg-$n-p$pair.log"
      echo "$cfg $n $pair $(total_ir "$out")" >>"$results/callgrind.txt"
      # The first pair's profiles are kept, for callgrind_annotate.
      [[ $pair == 1 ]] || rm -f "$out"
    done
  done
  echo "  pair $pair:$(awk -v p="$pair" -v a="$cg_small" -v b="$cg_big" '
    $3 == p && $2 == a {x[$1] = $4} $3 == p && $2 == b {y[$1] = $4}
    END {for (c in y) printf " %s %.0f", c, (y[c] - x[c]) / (b - a)}' "$results/callgrind.txt")"
done

# What the cluster path itself costs per lock: the self instructions of the
# member's routing layer (routed_member, cluster_router, cluster_routing, the
# redirection reader), from the first pair's two profiles.
routed_ir() {
  callgrind_annotate --auto=no --inclusive=no --threshold=100 "$1" 2>/dev/null |
    awk '/routed_member::|cluster_router::|cluster_routing::|read_redirection|calls_for_refresh/ {
           ir = $1; gsub(",", "", ir); sum += ir} END {print sum + 0}'
}
for cfg in cluster1 cluster3; do
  a=$(routed_ir "$results/callgrind-$cfg-$cg_small-p1.out")
  b=$(routed_ir "$results/callgrind-$cfg-$cg_big-p1.out")
  echo "$cfg $(( (b - a) / (cg_big - cg_small) ))" >>"$results/callgrind-routed.txt"
done

cat >"$results/meta.json" <<EOF
{"date": "$(date -u '+%Y-%m-%d %H:%M UTC')", "seconds": $(( $(date +%s) - started )),
 "cores": $(nproc), "load_before": "$load_before", "load_after": "$(cut -d' ' -f1 /proc/loadavg)",
 "standalone": "$standalone",
 "redis": "$(redis-server --version | awk '{print $3}' | sed 's/v=//')",
 "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)",
 "secs": $secs, "reps": $reps, "resources": $resources, "cg_small": $cg_small, "cg_big": $cg_big,
 "cg_pairs": $cg_pairs}
EOF
python3 bench/cluster_scaleout_report.py "$results" | tee "$results/summary.md"
if [[ $publish == 1 ]]; then
  rm -rf docs/benchmarks/scaleout
  mkdir -p docs/benchmarks/scaleout
  cp "$results"/*.json "$results"/*.txt "$results/summary.md" docs/benchmarks/scaleout/
  echo "scaleout: published to docs/benchmarks/scaleout/"
fi
echo "scaleout: done in $(( $(date +%s) - started )) s; results in $results"
