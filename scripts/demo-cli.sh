#!/usr/bin/env bash
# The `redlock` command-line tool against running masters (scripts/demo.sh starts
# them and then calls this): two `redlock run`s contend for one resource, and the
# second waits for the first; a third that will not wait exits 75; then a lock is
# acquired, inspected and released by value from separate invocations.
#   scripts/demo-cli.sh [CONFIG]     (default configs/local.json)
# REDLOCK_BIN overrides the binary (default build/release/cli/redlock).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
config=${1:-$root/configs/local.json}
redlock=${REDLOCK_BIN:-$root/build/release/cli/redlock}
[[ -x $redlock ]] || { echo "demo-cli: $redlock is missing; build first (scripts/demo.sh does)" >&2; exit 1; }
export REDLOCK_CONFIG=$config

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%H:%M:%S.%3N; }
say() { printf '%s  %-6s %s\n' "$(now)" "$1" "$2"; }

# The critical section: $1 names the runner. It marks its entry in $work so that
# the demo can start the second runner once the first holds the lock.
# shellcheck disable=SC2016  # expanded by the sh -c that redlock runs
section='printf "%s  %-6s %s\n" "$(date +%H:%M:%S.%3N)" "$1" "in the critical section (fence $REDLOCK_FENCE)"
touch "$2/$1.in"; sleep 1
printf "%s  %-6s %s\n" "$(date +%H:%M:%S.%3N)" "$1" "leaving; redlock releases the lock"'

echo "redlock CLI demo: $config"
echo
echo "1. Two runs on demo:report; bob waits (up to 10 s) while alice holds it."
say alice "redlock run --resource demo:report --fence --wait-ms 10000 -- ..."
"$redlock" run --resource demo:report --fence --wait-ms 10000 -- sh -c "$section" sh alice "$work" &
pids+=($!)
for _ in $(seq 200); do [[ -e $work/alice.in ]] && break; sleep 0.05; done
[[ -e $work/alice.in ]] || { echo "demo-cli: alice never got the lock" >&2; exit 1; }
say bob "redlock run --resource demo:report --fence --wait-ms 10000 -- ...  (waits)"
"$redlock" run --resource demo:report --fence --wait-ms 10000 -- sh -c "$section" sh bob "$work" &
pids+=($!)
sleep 0.2
say carol "redlock run --resource demo:report --wait-ms 0 -- ...  (will not wait)"
status=0
"$redlock" run --resource demo:report --wait-ms 0 -- true 2>/dev/null || status=$?
say carol "exit $status: the lock could not be had within --wait-ms"
wait "${pids[0]}"
wait "${pids[1]}"
pids=()
say demo "both runs exited 0; the fence grew from alice to bob"

echo
echo "2. A lock held across invocations: acquire, status, release by value."
value=$("$redlock" acquire --resource demo:deploy --ttl-ms 30000 2>/dev/null)
say demo "redlock acquire --resource demo:deploy  ->  value $value"
head -1 <<<"$("$redlock" status --resource demo:deploy)"
"$redlock" release --resource demo:deploy --value "$value"

echo
echo "3. redlock check (these local masters run without AOF, hence the warning):"
"$redlock" check
