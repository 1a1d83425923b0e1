#!/usr/bin/env bash
# What a grant costs on the wire when every lock is taken by a fresh `redlock`
# process (issue 15's target: 16 `redlock run` loops taking turns cost at most
# 35 client commands per grant). Each node is watched with `redis-cli MONITOR`;
# the commands that scripts make are left out (MONITOR tags them "lua"), so what
# is counted is what the clients sent.
#
#   bench/cli_turns.sh [REDLOCK_BINARY]     (default build/release/cli/redlock)
#
# LOOPS (16) loops each run GRANTS (10) times, one after the other:
#   redlock --config CONFIG run --resource RESOURCE --wait-ms 5000 -- sleep HOLD
# all on one resource, so they take turns (RUN_FLAGS adds flags to run, e.g.
# --fair). Bounded: every loop gives up after
# LIMIT_S (120) seconds. CONFIG defaults to configs/local.json (5 masters on
# 7001-7005); the masters are started with scripts/local-cluster.sh if none
# answers there, and then stopped again. Nothing else may use them meanwhile:
# MONITOR counts every client.
#
# KEEP=1 keeps the MONITOR output (its directory is printed). Prints grants,
# then client commands per grant: in all, in the handshakes (AUTH, HELLO,
# SCRIPT, INFO, CONFIG, SUBSCRIBE, PING, CLIENT, SELECT) and in locking (the
# rest), and a count of each command (EVALSHA by script name, read from
# lib/sansio/scripts.cpp). CONFIG is an admin command, which Redis never shows in
# MONITOR: it is not in these counts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
redlock=${1:-$root/build/release/cli/redlock}
config=${CONFIG:-$root/configs/local.json}
loops=${LOOPS:-16}
grants=${GRANTS:-10}
hold=${HOLD:-0.001}
limit_s=${LIMIT_S:-120}
resource=${RESOURCE:-bench:cli-turns}

[[ -x $redlock ]] || { echo "cli_turns: $redlock is not an executable; build first" >&2; exit 66; }
command -v redis-cli >/dev/null || { echo "cli_turns: redis-cli is not installed" >&2; exit 69; }
ports=$(grep -o '"port"[[:space:]]*:[[:space:]]*[0-9]*' "$config" | grep -o '[0-9]*$')

work=$(mktemp -d)
started_cluster=0
monitors=()
cleanup() {
  for pid in "${monitors[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [[ $started_cluster == 1 ]]; then "$root/scripts/local-cluster.sh" stop "$config"; fi
  if [[ -n ${KEEP:-} ]]; then echo "cli_turns: MONITOR output kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

up=1
for port in $ports; do
  [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]] || up=0
done
if [[ $up == 0 ]]; then
  "$root/scripts/local-cluster.sh" start "$config" >/dev/null
  started_cluster=1
fi
for port in $ports; do redis-cli -p "$port" del "redlock:{$resource}" >/dev/null; done

for port in $ports; do
  redis-cli -p "$port" monitor >"$work/monitor-$port" &
  monitors+=($!)
done
for port in $ports; do  # MONITOR answers OK once it is attached
  for _ in $(seq 100); do [[ -s $work/monitor-$port ]] && break; sleep 0.05; done
  [[ -s $work/monitor-$port ]] || { echo "cli_turns: MONITOR on $port did not start" >&2; exit 1; }
done

started=$(date +%s%N)
loop_pids=()
for l in $(seq "$loops"); do
  (
    deadline=$((SECONDS + limit_s))
    for _ in $(seq "$grants"); do
      ((SECONDS < deadline)) || break
      # shellcheck disable=SC2086  # RUN_FLAGS is split on purpose
      if "$redlock" --config "$config" run --resource "$resource" --wait-ms 5000 ${RUN_FLAGS:-} -- sleep "$hold" \
        >/dev/null 2>"$work/err-$l"; then
        echo >>"$work/granted-$l"
      else
        echo >>"$work/failed-$l"
      fi
    done
  ) &
  loop_pids+=($!)
done
for pid in "${loop_pids[@]}"; do wait "$pid"; done
elapsed=$((($(date +%s%N) - started) / 1000000))
sleep 0.3  # the last releases reach MONITOR
for pid in "${monitors[@]}"; do kill "$pid" 2>/dev/null || true; done
for pid in "${monitors[@]}"; do wait "$pid" 2>/dev/null || true; done
monitors=()

granted=$(cat "$work"/granted-* 2>/dev/null | wc -l || true)
failed=$(cat "$work"/failed-* 2>/dev/null | wc -l || true)
# A line is: 1700000000.123456 [0 127.0.0.1:40000] "SET" "k" ...; a script's calls
# have "[0 lua]". The first line of each file is MONITOR's own OK.
cat "$work"/monitor-* | grep '^[0-9]' | grep -v ' lua\] ' |
  sed -E 's/^[^"]*"([^"]*)"( "([^"]*)")?.*/\U\1 \3/' >"$work/commands"
# Script names by SHA-1, from the sources in scripts.cpp (as the library computes them).
python3 - "$root/lib/sansio/scripts.cpp" >"$work/script-names" <<'PY' || true
import hashlib, re, sys
text = open(sys.argv[1]).read()
for m in re.finditer(r'constexpr std::string_view (\w+)_source = R"lua\((.*?)\)lua";', text, re.S):
    print(hashlib.sha1(m.group(2).encode()).hexdigest()[:8].upper(), m.group(1))
PY
awk -v granted="$granted" -v failed="$failed" -v elapsed="$elapsed" -v redlock="$redlock" '
  function handshake(name) {
    return name ~ /^(AUTH|HELLO|SCRIPT|INFO|CONFIG|SUBSCRIBE|PING|CLIENT|SELECT)$/
  }
  FILENAME != commands { script[$1] = $2; next }
  {
    name = $1
    label = name
    if (name == "SCRIPT" || name == "CONFIG" || name == "CLIENT") label = name " " $2
    if (name == "EVALSHA") {
      sha = substr($2, 1, 8)
      label = name " " (sha in script ? script[sha] : sha)
    }
    count[label]++
    total++
    if (handshake(name)) hs++; else lk++
  }
  END {
    printf "binary: %s\n", redlock
    printf "grants: %d (failed runs: %d) in %.1f s\n", granted, failed, elapsed / 1000
    if (granted == 0) exit 1
    printf "client commands per grant: %.1f (handshake %.1f, locking %.1f)\n",
           total / granted, hs / granted, lk / granted
    for (c in count) printf "  %8d  %6.2f per grant  %s\n", count[c], count[c] / granted, c
  }' commands="$work/commands" "$work/script-names" "$work/commands" | { read -r a; echo "$a"; read -r b; echo "$b"; read -r c; echo "$c"; sort -n -r; }
