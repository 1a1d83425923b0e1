#!/usr/bin/env bash
# The contended hand-off table (issue 15): workers of one client on one
# resource, each holding the lock 1 ms, waiting up to 2 s, for 16 and 64
# workers and each wait mode. Prints a markdown table and, under it, the exact
# command behind each row.
#
#   bench/contended.sh [CONFIG] [--duration-s S]   # CONFIG: configs/local.json
#   bench/contended.sh --bound [--runs N] [--wait-mode M] [--base-port P] [CONFIG]
#
# About 50 s: 8 runs of S seconds (default 5) after a short warm-up. The
# masters of CONFIG must already be up (scripts/local-cluster.sh start CONFIG);
# an unreachable node stops the script before any run. It builds redlock_load
# (Release) in $REDLOCK_BENCH_BUILD (default build/bench-release) if needed;
# the JSON of each run is kept under $build/results/contended-<time>/.
#
# --bound (issue 28, item 4): 16 workers of one client at a 1 ms hold against
# the bound 1 / (1 ms + one majority round trip), the round trip being the raw
# client's acquire p50 at one lock in flight (redlock_load --mode raw
# --concurrency 1), measured in the same run: N pairs (default 3) of a raw and
# a contended run (wait mode M, default targeted), in turn (ABBA), S seconds
# each (default 4). Prints each pair's ratio and the medians. --base-port P:
# 5 masters of its own on 127.0.0.1:P..P+4 (bench/run_servers.sh), stopped by
# pid at the end, instead of CONFIG's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

config=configs/local.json
secs="" bound=0 runs=3 base="" wait_mode=targeted
while [[ $# -gt 0 ]]; do
  case $1 in
    --duration-s) secs=${2:?--duration-s needs seconds}; shift 2 ;;
    --bound) bound=1; shift ;;
    --runs) runs=${2:?--runs needs a count}; shift 2 ;;
    --wait-mode) wait_mode=${2:?--wait-mode needs a mode}; shift 2 ;;
    --base-port) base=${2:?--base-port needs a port}; shift 2 ;;
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "usage: $0 [CONFIG] [--duration-s S] [--bound [--runs N] [--wait-mode M]" \
             "[--base-port P]]" >&2; exit 64 ;;
    *) config=$1; shift ;;
  esac
done
if [[ -n $base ]]; then  # masters of its own, stopped by pid however this ends
  servers_dir=$(mktemp -d)
  # shellcheck disable=SC2034 # read by bench/run_servers.sh
  servers_knob="--base-port P"
  # shellcheck source=bench/run_servers.sh disable=SC1091
  source bench/run_servers.sh
  trap 'servers_stop; rm -rf "$servers_dir"' EXIT
  ports=$(seq "$base" $((base + 4)))
  # shellcheck disable=SC2086 # a list of ports
  servers_check_free $ports || exit 69
  # shellcheck disable=SC2086
  servers_start $ports || exit 69
  config=$servers_dir/five.json
  python3 -c 'import json, sys; c = json.load(open("configs/local.json"))
c["nodes"] = [{"host": "127.0.0.1", "port": int(sys.argv[1]) + i} for i in range(5)]
json.dump(c, open(sys.argv[2], "w"), indent=2)' "$base" "$config"
fi
[[ -f $config ]] || { echo "contended: no such config: $config" >&2; exit 78; }

# Every node of the config must answer before anything runs.
python3 - "$config" <<'EOF' || { echo "contended: the cluster of $config is not reachable; start it: scripts/local-cluster.sh start $config" >&2; exit 69; }
import json, socket, sys
nodes = json.load(open(sys.argv[1]))["nodes"]
down = []
for n in nodes:
    where = n.get("unix") or f'{n.get("host", "127.0.0.1")}:{n.get("port", 6379)}'
    try:
        if "unix" in n:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(1)
            s.connect(n["unix"])
        else:
            s = socket.create_connection((n.get("host", "127.0.0.1"), n.get("port", 6379)), timeout=1)
        if not n.get("tls"):
            s.sendall(b"PING\r\n")
            if s.recv(64)[:1] not in (b"+", b"-"):  # -NOAUTH still means a Redis answered
                raise OSError("not a Redis reply")
        s.close()
    except OSError as e:
        down.append(f"{where} ({e})")
if down:
    print("contended: not reachable: " + ", ".join(down), file=sys.stderr)
    sys.exit(1)
EOF

build=${REDLOCK_BENCH_BUILD:-build/bench-release}
load=$build/bench/redlock_load
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_TESTS=OFF \
        -DREDLOCK_BUILD_CLI=OFF -DREDLOCK_BUILD_EXAMPLES=OFF >/dev/null
fi
nice -n 10 cmake --build "$build" -j2 --target redlock_load >/dev/null

results=$build/results/contended-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$results"
run() {  # LABEL ARGS...: one redlock_load run, its JSON in RESULTS/LABEL.json
  local label=$1; shift
  local cmd=("$load" --config "$config" "$@" --progress never --label "$label"
             --json "$results/$label.json")
  # Bounded: redlock_load gives up 30 s past a phase's deadline.
  if ! "${cmd[@]}" >"$results/$label.txt" 2>&1; then
    cat "$results/$label.txt" >&2
    echo "contended: FAILED: ${cmd[*]}" >&2
    exit 70
  fi
  commands+=("${cmd[*]}")
}
commands=()
if [[ $bound == 1 ]]; then
  for ((r = 1; r <= runs; r++)); do
    raw=("raw-$r" --mode raw --concurrency 1 --duration-s "${secs:-4}" --warmup-ops 200 --repeat 1)
    lib=("lib-$r" --contended --workers 16 --hold-ms 1 --max-wait-ms 2000 --wait-mode "$wait_mode"
         --duration-s "${secs:-4}" --warmup-ops 50 --repeat 1)
    echo "contended: bound, pair $r of $runs" >&2
    if ((r % 2 == 1)); then run "${raw[@]}"; run "${lib[@]}"; else run "${lib[@]}"; run "${raw[@]}"; fi
  done
  python3 bench/contended_bound.py "$results" "${commands[@]}"
  exit
fi
for w in 16 64; do
  for mode in targeted fair broadcast poll; do
    echo "contended: $w workers, $mode" >&2
    run "contended-w$w-$mode" --contended --workers "$w" --hold-ms 1 --max-wait-ms 2000 \
      --wait-mode "$mode" --duration-s "${secs:-5}" --warmup-ops 50 --repeat 1
  done
done

python3 - "$results" "${commands[@]}" <<'EOF'
import json, sys
results, commands = sys.argv[1], sys.argv[2:]
def ms(ns): return f"{ns / 1e6:.3f}"
print("| workers | wait mode | grants/s | share of bound | hand-off p50 (ms) | hand-off p99 (ms)"
      " | client requests/grant | script calls/grant | Jain |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
notes = []
for cmd in commands:
    label = cmd.split("--label ")[1].split()[0]
    d = json.load(open(f"{results}/{label}.json"))
    r = d["results"]["lib"]
    h = r.get("handoff_ns", {"p50": 0, "p99": 0})
    print(f'| {d["concurrency"]} | {d["wait_mode"]} | {r["ops_per_s"]:.0f} | {r["bound_share"]:.1%}'
          f' | {ms(h["p50"])} | {ms(h["p99"])} | {r["client_requests_per_lock"]:.2f}'
          f' | {r["redis_calls_per_lock"]:.2f} | {r["jain"]:.3f} |')
    extra = []
    if r["failed"]: extra.append(f'{r["failed"]} failed ({json.dumps(r["errors"])})')
    if r.get("handoff_overlaps"): extra.append(f'{r["handoff_overlaps"]} overlapping grants')
    extra.append(f'{r["handoffs_per_lock"]:.2f} hand-offs/grant')
    if "held_ns" in r: extra.append(f'lock held p50 {ms(r["held_ns"]["p50"])} ms (the 1 ms sleep)')
    extra.append(f'load average {d["load_average_before"]:.2f} -> {d["load_average_after"]:.2f}')
    notes.append(f'{d["concurrency"]} workers, {d["wait_mode"]}: ' + "; ".join(extra))
print()
print("Hold 1 ms (share of bound: grants/s over 1000), max_wait 2 s, "
      "one client, one resource, one run each. Commands:")
print()
print("```sh")
for cmd in commands: print(cmd)
print("```")
print()
for n in notes: print(f"- {n}")
print(f"\nJSON: {results}/")
EOF
