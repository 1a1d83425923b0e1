#!/usr/bin/env bash
# The plain suites on a busy machine: do the tests' timing bounds hold when every core is taken?
# Builds build/test as scripts/test.sh's plain stage does (unity Debug, -Werror), then, RUNS
# times (default 3), with a CPU hog per core (a busy loop at normal priority) running
# throughout, the unit, integration and CLI tests (ctest -L 'unit|integration|cli', three per
# core, as scripts/test.sh runs them under ASan) and then the torture tests (-L torture, two at
# a time, as scripts/test.sh runs them). Prints each run's result and seconds, and a table at
# the end; exits 1 if any run failed. The hogs are stopped on exit, however it exits.
#
#   scripts/test-under-load.sh [RUNS]
#   REDLOCK_LOAD_HOGS=N        hogs (default: nproc)
#   REDLOCK_LOAD_NO_BUILD=1    use build/test as it is
#   REDLOCK_LOAD_CTEST_ARGS="-R regex"   more ctest arguments for every run (one flaky test,
#                              say); split on spaces
# Logs: build/test-logs/under-load/run-<n>-<suite>.log (ctest's output) and .LastTest.log.
set -Eeuo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=${1:-3}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "test-under-load: RUNS must be a positive number, not '$runs'" >&2; exit 2; }
jobs=$(nproc)
hogs=${REDLOCK_LOAD_HOGS:-$jobs}
build=build/test
logs=build/test-logs/under-load
trap 'echo "test-under-load: scripts/test-under-load.sh:$LINENO: \`$BASH_COMMAND\` exited with status $?" >&2' ERR

hog_pids=()
stop_hogs() {
  local pid
  for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${hog_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  hog_pids=()
}
trap stop_hogs EXIT
# ctest runs in the background, so that a signal stops this script at once (bash runs a trap only
# once its foreground command ends); the signal is passed on to ctest.
ctest_pid=""
# shellcheck disable=SC2317 # called by the traps below
on_signal() {
  [[ -z $ctest_pid ]] || kill -TERM "$ctest_pid" 2>/dev/null || true
  exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
start_hogs() {
  local i
  for ((i = 0; i < hogs; i++)); do
    # A subshell spinning in the shell: all user time, no I/O, normal priority.
    (
      trap - INT TERM
      while :; do :; done
    ) &
    hog_pids+=($!)
  done
}

export PYTHONDONTWRITEBYTECODE=1
if [[ ${REDLOCK_LOAD_NO_BUILD:-0} != 1 ]]; then
  echo "test-under-load: building $build (unity Debug, -Werror), without load"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_WERROR=ON \
    -DREDLOCK_TORTURE_SERIAL=OFF -DREDLOCK_BUILD_SUITES=ON -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_CXX_FLAGS_DEBUG=-g1 >/dev/null
  cmake --build "$build" -j"$jobs"
fi
# scripts/test.sh's plain stage builds this tree without the suites (it runs them under ASan).
grep -q '^REDLOCK_BUILD_SUITES:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null || {
  echo "test-under-load: $build was configured without the unit, integration and CLI suites" \
    "(REDLOCK_BUILD_SUITES=OFF, as scripts/test.sh does): run without REDLOCK_LOAD_NO_BUILD=1" >&2
  exit 2
}
mkdir -p "$logs"

# suite RUN NAME CTEST_ARGS...: one ctest run; prints its line, and returns its status.
results=()
suite() {
  local run=$1 name=$2 start=$SECONDS status=0 log failed
  shift 2
  log=$logs/run-$run-${name//|/-}.log
  # shellcheck disable=SC2086 # a list of arguments
  ctest --test-dir "$build" --output-on-failure "$@" ${REDLOCK_LOAD_CTEST_ARGS:-} >"$log" 2>&1 &
  ctest_pid=$!
  wait "$ctest_pid" || status=$?
  ctest_pid=""
  cp "$build/Testing/Temporary/LastTest.log" "${log%.log}.LastTest.log" 2>/dev/null || true
  local took=$((SECONDS - start)) line
  if ((status == 0)); then
    line="passed in $took s"
  else
    failed=$(sed -n '/^The following tests FAILED:$/,$ s/^[[:space:]]*[0-9][0-9]* - //p' "$log" |
             head -10 | paste -sd ';' || true)
    line="FAILED in $took s (ctest exit $status): ${failed:-see $log}"
  fi
  echo "test-under-load: run $run/$runs, $name, $hogs hogs: $line"
  results+=("$(printf '%-4s %-22s %s' "$run" "$name" "$line")")
  return "$status"
}

any_failed=0
for ((run = 1; run <= runs; run++)); do
  start_hogs
  suite "$run" "unit|integration|cli" -j"$((jobs * 3))" -L 'unit|integration|cli' || any_failed=1
  suite "$run" torture -j2 -L torture || any_failed=1
  stop_hogs
done

echo
echo "test-under-load: $runs runs, $hogs CPU hogs on $jobs cores (logs: $logs/):"
printf 'test-under-load:   %-4s %-22s %s\n' run suite result
for r in "${results[@]}"; do echo "test-under-load:   $r"; done
exit "$any_failed"
