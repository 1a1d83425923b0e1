#!/usr/bin/env bash
# The README's second command: install what is missing, build with warnings as
# errors, run every test (against real redis-server processes the tests start
# themselves). Its stages, in this order, each fatal on failure:
#   deps         the packages (scripts/install-deps.sh), and a CHANGELOG.md entry for this version;
#   plain-build  a unity Debug build of everything with -Werror (build/test);
#   plain-tests  its benchmark smoke tests (and any label added later): ctest -LE the rest;
#   torture      its torture-labelled tests, two at a time, alone;
#   install      an installed copy works with find_package(redlock), one version everywhere;
#   packager     a packager's build: Release, shared (BUILD_SHARED_LIBS), file by file (no unity),
#                -Werror (build/test-shared): its SONAME, only the public API exported, a
#                relative RUNPATH, find_package and pkg-config; and the Debian package made from
#                it (cpack -G DEB): its contents, Depends and shlibs, installable, and what it
#                installs works once extracted;
#   asan-ubsan   ASan + UBSan (leaks included): unit, integration and CLI tests, each run once
#                (CMakePresets.json: asan-ubsan; the CLI tests run the instrumented `redlock`);
#   tsan         TSan: the integration tests again, where the client's loop thread meets the
#                callers' threads (CMakePresets.json: tsan), in parallel shards;
#   fuzz         libFuzzer (clang): each target in fuzz/ for 60 s, from its seeds in fuzz/corpus/.
# Any sanitizer report fails the run, as does a crash found by a fuzzer.
#
# Three builds run in the background at nice 19 while an earlier stage's tests run (they mostly
# wait, and leave a core or so idle): the packager's during the torture tests, TSan's during the
# ASan tests, the fuzz targets' during the TSan shards (prebuild, await_prebuild). Their output
# shows in the stage that needs them, and their time counts there only when it had to wait.
#
# Each stage prints one line when it ends (its name, seconds, passed or FAILED) and its whole
# output also goes to build/test-logs/<stage>.log (ctest's LastTest.log of each run beside it).
# At the end: a table of the stages, and after a failure a report that names the stage, each
# failing test with the last lines of its output (and any seed/replay/run directory line), and
# the script line and command of any other failing step: the last 80 lines say what failed.
#
# REDLOCK_TEST_ONLY="stage stage..." (or comma-separated) runs the named stages only, in the
# order above (a later stage uses the trees earlier ones built). Three more stages run only when
# named there: selftest-ctest, selftest-command and selftest-tsan fail on purpose, to show the
# failure report (a failing ctest run, a failing pipeline in a function, a TSan shard halted in a
# test case and one killed by its timeout).
set -Eeuo pipefail
set -o functrace
# Command substitutions run with set -e too, so that a failing command inside one is named.
shopt -s inherit_errexit
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

logs=build/test-logs
rm -rf "$logs"
mkdir -p "$logs/failed"
current_stage=main
# Python run by a test writes no __pycache__ into the source tree (bench/run_test.sh fails on
# any file written outside the build directory while it runs).
export PYTHONDONTWRITEBYTECODE=1

# The ERR trap: any failing command (a pipeline's element included: pipefail) names its stage,
# its line, the functions it ran in, and its status. A failure in a subshell or a command
# substitution is named where it happened, then again by each command it fails in turn.
on_err() {
  local status=$1 pipestatus=$2 line=$3 command=$4 i calls=""
  # set +e: the script reads this status itself.
  [[ $- == *e* ]] || return 0
  for ((i = 2; i < ${#FUNCNAME[@]}; i++)); do
    calls+=" <- ${FUNCNAME[i]}:${BASH_LINENO[i - 1]}"
  done
  # A function that returned its failure, or a pipeline (BASH_COMMAND is its last command):
  # the line's own text.
  if [[ $command == return* || $pipestatus == *" "* ]]; then
    command=$(sed -n "${line}s/^ *//p" "$root/scripts/test.sh")
  fi
  local message="scripts/test.sh:$line (${FUNCNAME[1]:-main}$calls): \`${command:0:300}\` exited with status $status"
  [[ $pipestatus == *" "* ]] && message+=" (pipeline statuses: $pipestatus)"
  echo "test: ERROR in stage $current_stage: $message" >&2
  printf '%s\t%s\n' "$current_stage" "$message" >>"$logs/errors.tsv"
}
trap 'on_err $? "${PIPESTATUS[*]}" "$LINENO" "$BASH_COMMAND"' ERR

jobs=$(nproc)
# Unity builds (CMAKE_UNITY_BUILD: a few source files per compiler run) build the tree in less
# than half the time; the packager stage builds the library file by file, so that each file
# still compiles on its own. A name that two files of one target both define at file scope (an
# anonymous namespace's constant, say) breaks a unity build: give it one home.
unity=-DCMAKE_UNITY_BUILD=ON
# Debug trees carry line tables only (-g1, not -g): enough for a sanitizer's or a debugger's
# stack trace with file and line, and each compiler run is about an eighth shorter.
debug_info=-DCMAKE_CXX_FLAGS_DEBUG=-g1
# Tests mostly wait (on servers, timers, child processes): at three per core the plain suites
# keep the two cores about half busy and take half the time they take at one per core.
test_jobs=$((jobs * 3))
build=build/test
# A step inside a stage, with the run's clock.
step() {
  echo "test: [$SECONDS s] $current_stage: $1"
}
# prebuild NAME FUNCTION: a later stage's build, started in the background at the lowest CPU
# priority (nice 19) while this stage's tests run. Those mostly wait on servers, timers and child
# processes, and a niced build takes only the CPU time they leave: it gets about 1/70 of a core
# that a test wants. Its output goes to $logs/NAME-build.log, its exit status to
# $logs/NAME-build.status; the stage that needs it calls await_prebuild NAME.
prebuild() {
  local name=$1 fn=$2
  [[ " ${run[*]} " == *" $name "* ]] || return 0  # its stage is not run
  rm -f "$logs/$name-build.status"
  step "building $name in the background (nice 19) while the tests run"
  (
    trap - ERR
    set +e
    renice -n 19 -p "$BASHPID" >/dev/null
    (
      set -e
      "$fn"
    ) >"$logs/$name-build.log" 2>&1
    echo "$?" >"$logs/$name-build.status"
  ) </dev/null >/dev/null 2>&1 & # not on the stage's pipe: the stage's tee would wait for it
  echo "$!" >"$logs/$name-build.pid"
}
# await_prebuild NAME FUNCTION: waits for NAME's background build and shows its output; where
# none was started (REDLOCK_TEST_ONLY left out its stage), runs FUNCTION here instead.
await_prebuild() {
  local name=$1 fn=$2 status
  if [[ ! -f $logs/$name-build.pid ]]; then
    "$fn"
    return
  fi
  step "waiting for the background build of $name"
  while [[ ! -f $logs/$name-build.status ]]; do sleep 1; done
  status=$(<"$logs/$name-build.status")
  cat "$logs/$name-build.log"
  if ((status != 0)); then
    record_failure build "$name" "its build exited with status $status" "$logs/$name-build.log"
    fail "the background build of $name failed (exit $status; above, and in $logs/$name-build.log)"
  fi
}
# A background build still running when the run ends (a stage failed) is stopped with it.
kill_tree() {
  local child
  for child in $(pgrep -P "$1" || true); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
stop_prebuilds() {
  local pidfile
  for pidfile in "$logs"/*-build.pid; do
    [[ -f $pidfile && ! -f ${pidfile%.pid}.status ]] && kill_tree "$(<"$pidfile")"
  done
  return 0
}
trap stop_prebuilds EXIT

# The version of project() in CMakeLists.txt: what --version, the CMake package, redlock.pc and
# the .deb must all say, and the newest entry of CHANGELOG.md.
project_version() {
  sed -n 's/^project(redlock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt
}
# fail MESSAGE: a check that failed; the report names it with its line.
fail() {
  echo "test: $*" >&2
  printf '%s\t%s\n' "$current_stage" "scripts/test.sh:${BASH_LINENO[0]} (${FUNCNAME[1]:-main}): $*" \
    >>"$logs/errors.tsv"
  exit 1
}

# --- Failures, kept for the report at the end -----------------------------------------------
# failures.tsv: stage, kind, name, what happened, a file with its output (or nothing).
record_failure() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$current_stage" "$1" "$2" "$3" "${4:-}" >>"$logs/failures.tsv"
}
# test_block LAST_TEST_LOG NAME: the lines ctest's LastTest.log holds for test NAME.
test_block() {
  awk -v name="$2" '
    /^[0-9]+\/[0-9]+ Test: / { line = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", line); inside = (line == name); next }
    inside { print }
    inside && index($0, "\"" name "\" time elapsed:") == 1 { inside = 0 }
  ' "$1"
}
# run_ctest TEST_DIR CTEST_ARGS...: ctest, from the top of the tree (CTEST_ARGS name the tree:
# --test-dir TEST_DIR or --preset). Its LastTest.log is kept under $logs; each failing test goes
# to the report with its output.
ctest_runs=0
run_ctest() {
  local dir=$1 status=0
  shift
  ctest_runs=$((ctest_runs + 1))
  local kept=$logs/$current_stage.ctest-$ctest_runs.log console=$logs/$current_stage.ctest-$ctest_runs.console.log
  rm -f "$dir/Testing/Temporary/LastTestsFailed.log"
  # -O: ctest's console output, in a file too (its list of failed tests says why each failed).
  ctest --output-on-failure --no-tests=error -O "$console" "$@" || status=$?
  cp "$dir/Testing/Temporary/LastTest.log" "$kept" 2>/dev/null || : >"$kept"
  if ((status == 0)); then return 0; fi
  local failed_list=$dir/Testing/Temporary/LastTestsFailed.log entry name out block k=0
  if [[ ! -s $failed_list ]]; then
    record_failure ctest "(no failed test listed)" "ctest $* exited with status $status" "$console"
    return "$status"
  fi
  while IFS= read -r entry; do
    name=${entry#*:}
    k=$((k + 1))
    out=$logs/failed/$current_stage-ctest$ctest_runs-$k.out
    block=$(test_block "$kept" "$name")
    # The test's own output: between "Output:" and "<end of output>".
    awk '/^Output:$/ { getline; on = 1; next } $0 == "<end of output>" { on = 0 } on' \
      <<<"$block" >"$out"
    local took why
    took=$(sed -n 's/^Test time = *\([0-9.]*\) sec$/\1/p' <<<"$block" | tail -1)
    # "The following tests FAILED:" then lines "<tab>  12 - name (Failed)": Failed, Timeout,
    # SEGFAULT, Subprocess aborted, Not Run...
    why=$(awk -v name="$name" '
      /^The following tests FAILED:$/ { list = 1; next }
      list { line = $0; sub(/^[ \t]*[0-9]+ - /, "", line)
             if (index(line, name " (") == 1) { print substr(line, length(name) + 3, length(line) - length(name) - 3); exit } }
    ' "$console")
    record_failure "ctest test" "$name" "${why:-Failed}${took:+ after $took s}" "$out"
  done <"$failed_list"
  return "$status"
}

# describe_exit STATUS SECONDS: what an exit status of a test process under `timeout` means.
describe_exit() {
  case $1 in
    124) echo "killed after $2 s by timeout (exit 124)" ;;
    137) echo "killed by SIGKILL (exit 137; timeout -k, $2 s and more)" ;;
    66) echo "a sanitizer report (exit 66, halt_on_error)" ;;
    1) echo "failed test cases (exit 1)" ;;
    *) if (($1 > 128)); then echo "killed by signal $(($1 - 128)) (exit $1)"; else echo "exit $1"; fi ;;
  esac
}
# doctest_shard BINARY LOG TIMEOUT ARGS...: one doctest process, its log naming each test case
# as it starts. doctest's console reporter names a case only when it fails, and stdout is lost
# when a sanitizer with halt_on_error ends the process: the xml reporter beside it writes
# <TestCase name="..."> when each case starts and flushes it (std::endl), so the last one in the
# log is the case that was running. --no-skipped-summary: no line per case outside the shard.
# Its exit status goes to LOG.status (the shard runs in the background).
doctest_shard() {
  local binary=$1 log=$2 limit=$3 status=0
  shift 3
  timeout -k 30 "$limit" "$binary" --reporters=console,xml --no-skipped-summary "$@" >"$log" 2>&1 ||
    status=$?
  echo "$status" >"$log.status"
}
# report_shard LOG STATUS TIMEOUT WHAT: a failed doctest process into the report.
report_shard() {
  local log=$1 status=$2 limit=$3 what=$4 running failing out
  running=$(grep -E '^ *<TestCase name="' "$log" | tail -1 |
            sed -e 's/^ *<TestCase name="\([^"]*\)".*/\1/' \
                -e "s/&quot;/\"/g; s/&apos;/'/g; s/&lt;/</g; s/&gt;/>/g; s/&amp;/\\&/g" || true)
  failing=$(sed -n 's/^TEST CASE:  //p' "$log" | sort -u | paste -sd ';' || true)
  out=$log.report
  # The console reporter's and the sanitizer's lines; not the xml reporter's (its elements, and
  # the text inside Original, Expanded, Exception, Info, Message and Text).
  awk '
    /^<\?xml|^\[doctest\] (doctest version|run with)/ { next }
    /^ *<(Original|Expanded|Exception|Info|Message|Text)( [^>]*)?>/ { inside = !/<\/(Original|Expanded|Exception|Info|Message|Text)>/; next }
    inside { if (/<\/(Original|Expanded|Exception|Info|Message|Text)>/) inside = 0; next }
    /^ *<\/?(doctest|Options|TestSuite|TestCase|SubCase|OverallResults[A-Za-z]*|Expression|Message)( |>|\/>|$)/ { next }
    { print }
  ' "$log" >"$out"
  local detail
  detail=$(describe_exit "$status" "$limit")
  if [[ -n $failing ]]; then
    detail+="; failed cases: $failing"
  fi
  if ! grep -q '^\[doctest\] Status:' "$log" && [[ -n $running ]]; then
    detail+="; running case: \"$running\""
  fi
  record_failure "$what" "$(basename "$log")" "$detail" "$out"
  echo "test: $what FAILED: $detail; its log ($log) follows" >&2
  tail -150 "$out" >&2
}

# --- The stages -------------------------------------------------------------------------------
stage_deps() {
  REDLOCK_WITH_CLANG=1 scripts/install-deps.sh
  command -v redis-server >/dev/null || fail "redis-server is missing"
  grep -q "^## \[.*$(project_version)" CHANGELOG.md ||
    fail "CHANGELOG.md has no entry for $(project_version)"
}

stage_plain_build() {
  # The unit, integration and CLI suites are built and run in the sanitizer stage only.
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_WERROR=ON \
    -DREDLOCK_TORTURE_SERIAL=OFF -DREDLOCK_BUILD_SUITES=OFF "$unity" "$debug_info" >/dev/null
  cmake --build "$build" -j"$jobs"
  # The decisions alone: lib/sansio builds as a target of its own, and nothing of libuv,
  # hiredis or OpenSSL is in its compile flags (cmake/sansio.cmake poisons their headers too).
  cmake --build "$build" --target redlock_sansio
  python3 - "$build/compile_commands.json" <<'PY'
import json, re, sys
# A unity build compiles Unity/unity_N_cxx.cxx files of the target's directory instead.
units = [u for u in json.load(open(sys.argv[1]))
         if "/lib/sansio/" in u["file"] or "sansio_headers" in u["file"] or "redlock_sansio.dir" in u["file"]]
assert units, "no lib/sansio unit in compile_commands.json"
bad = [u["file"] for u in units if re.search(r"uv|hiredis|ssl|crypto", u.get("command", " ".join(u.get("arguments", []))).replace("sansio_poison", ""))]
assert not bad, f"lib/sansio units with an I/O library in their flags: {bad}"
print(f"test: {len(units)} lib/sansio units compiled with no libuv, hiredis or OpenSSL flag")
PY
}

# The unit, integration and CLI tests run once, instrumented, in the sanitizer stage below
# (ASan + UBSan catch all a plain run would, and more); here, the rest in parallel (the
# benchmarks' smoke tests, and any label added later), then the torture-labelled tests two at
# a time, with nothing else running (their load must not skew other tests' timing bounds, and
# they pass side by side): the torture test, the cluster-member torture test and the CLI stress
# test (about 125, 70 and 105 s) take about 140-180 s so, where the torture and CLI stress tests
# alone took 125 s side by side and 195 s one after the other.
stage_plain_tests() {
  run_ctest "$build" --test-dir "$build" -j"$test_jobs" --timeout 300 -LE 'torture|unit|integration|cli'
}

stage_torture() {
  prebuild packager build_packager
  run_ctest "$build" --test-dir "$build" -j2 -L torture
}

stage_install() {
  local prefix=$root/$build/install-tree
  rm -rf "$prefix"
  cmake --install "$build" --prefix "$prefix" >/dev/null
  cmake -S tests/consumer -B "$build/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$build/consumer" >/dev/null
  "$build/consumer/redlock_consumer"
  # With standard input closed, as CI runs this script (libuv once aborted the host then).
  "$build/consumer/redlock_consumer" 0<&- >/dev/null
  # One version everywhere: the installed CLI, the CMake package's version file, redlock.pc.
  [[ $("$prefix/bin/redlock" --version) == *"$(project_version)"* ]] ||
    fail "redlock --version is not $(project_version)"
  grep -q "PACKAGE_VERSION \"$(project_version)\"" "$(find "$prefix" -name redlockConfigVersion.cmake)" ||
    fail "the CMake package's version is not $(project_version)"
  grep -q "^Version: $(project_version)$" "$(find "$prefix" -name redlock.pc)" ||
    fail "redlock.pc's version is not $(project_version)"
  # The man page names the example configs under the prefix it was installed to.
  grep -qF "$prefix/share/redlock/" "$prefix/share/man/man1/redlock.1" ||
    fail "the installed man page does not name $prefix/share/redlock/"
  [[ -f $prefix/share/doc/redlock/copyright ]] || fail "no share/doc/redlock/copyright installed"
  # The installed CLI, run outside the checkout with no config anywhere, exits 78 and
  # points at the example configs it installed.
  local nowhere message status
  nowhere=$(mktemp -d)
  set +e
  message=$(cd "$nowhere" && env -u REDLOCK_CONFIG -u XDG_CONFIG_HOME HOME="$nowhere" \
            "$prefix/bin/redlock" check 2>&1)
  status=$?
  set -e
  rm -rf "$nowhere"
  if [[ ! -e /etc/redlock/config.json ]] && { [[ $status != 78 ]] || [[ $message != *"$prefix/share/redlock"* ]]; }; then
    fail "the installed redlock without a config: exit $status, '$message'"
  fi
}

# What a packager builds: Release, libredlock.so, every file compiled on its own (no unity
# batches), warnings as errors (GCC's -O2/-O3 warnings, -Wrestrict and the like, show only
# here), under /usr. The library, the CLI and its man page: the tests and benchmarks use the
# internals and are left out of a shared build, and the unity-built plain stage builds them.
# Then the same tree is installed to a scratch prefix (the shared library's checks) and packaged
# (the Debian package's checks).
build_packager() {
  local tree=build/test-shared
  cmake -S . -B "$tree" -DCMAKE_BUILD_TYPE=Release -DREDLOCK_WERROR=ON -DBUILD_SHARED_LIBS=ON \
        -DCMAKE_UNITY_BUILD=OFF -DCMAKE_INSTALL_PREFIX=/usr \
        -DREDLOCK_BUILD_CLI=ON -DREDLOCK_BUILD_MAN=ON -DREDLOCK_BUILD_EXAMPLES=OFF \
        -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF >/dev/null
  cmake --build "$tree" -j"$jobs"
}
stage_packager() {
  local tree=build/test-shared
  await_prebuild packager build_packager
  step "built; the shared library installed to a scratch prefix"
  local shared_prefix=$root/$tree/install-tree shared_lib soname exports
  rm -rf "$shared_prefix"
  cmake --install "$tree" --prefix "$shared_prefix" >/dev/null
  shared_lib=$(find "$shared_prefix" -name 'libredlock.so.*.*.*')
  soname=libredlock.so.$(project_version | cut -d. -f1-2)  # 0.x: major.minor (CHANGELOG.md)
  # A producer's output is read whole before grep -q looks at it: piped, grep -q exits at its
  # first match, the producer's next write gets SIGPIPE, and pipefail fails the run (ldd then
  # exits 1: what CI hit once, at random).
  grep -qF "Library soname: [$soname]" <<<"$(readelf -d "$shared_lib")" ||
    fail "$shared_lib has no SONAME $soname"
  # Hidden visibility: no function, vtable or typeinfo of the internals (redlock::detail) is
  # exported (a public signature may still name a detail type, as client's private constructor
  # does). nm runs on its own: inside the `if` below its failure would pass unseen.
  exports=$(nm -DC --defined-only "$shared_lib" | cut -d' ' -f3-)
  [[ -n $exports ]] || fail "nm lists no symbol defined in $shared_lib"
  if grep -E '^((typeinfo( name)?|vtable) for )?redlock::detail::' <<<"$exports"; then
    fail "$shared_lib exports internals (above)"
  fi
  # The installed CLI starts from the scratch prefix with no LD_LIBRARY_PATH: a relative RUNPATH
  # ($ORIGIN/../lib/<multiarch>) finds the library beside it, as it would under ~/.local.
  grep -q "$(project_version)" <<<"$(env -u LD_LIBRARY_PATH "$shared_prefix/bin/redlock" --version)" ||
    fail "$shared_prefix/bin/redlock does not start from its prefix"
  # shellcheck disable=SC2016 # a literal $ORIGIN
  grep -q 'RUNPATH.*\$ORIGIN/\.\./lib' <<<"$(readelf -d "$shared_prefix/bin/redlock")" ||
    fail "$shared_prefix/bin/redlock has no relative RUNPATH"
  cmake -S tests/consumer -B "$tree/consumer" -DCMAKE_PREFIX_PATH="$shared_prefix" >/dev/null
  cmake --build "$tree/consumer" >/dev/null
  grep -q "$shared_prefix/.*libredlock\.so\.0" <<<"$(ldd "$tree/consumer/redlock_consumer")" ||
    fail "the consumer does not load libredlock.so.0 from $shared_prefix"
  "$tree/consumer/redlock_consumer"
  local pc_dir pc_flags
  pc_dir=$(dirname "$(find "$shared_prefix" -name redlock.pc)")
  pc_flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs redlock)
  # shellcheck disable=SC2086 # pkg-config's output is a list of flags
  c++ -std=c++20 tests/consumer/main.cpp -o "$tree/consumer/redlock_consumer_pc" \
      $pc_flags -Wl,-rpath,"$(dirname "$shared_lib")"
  "$tree/consumer/redlock_consumer_pc"

  step "the Debian package: cpack -G DEB, its contents, Depends and shlibs, installable, and what it installs works"
  rm -f "$tree"/redlock_*.deb
  (cd "$tree" && cpack -G DEB >/dev/null)
  local package contents wanted depends
  package=$(find "$root/$tree" -maxdepth 1 -name 'redlock_*.deb')
  [[ -f $package ]] || fail "cpack made no single redlock_*.deb in $tree"
  contents=$(dpkg-deb --contents "$package" | awk '{print $6}')
  for wanted in '^\./usr/bin/redlock$' '^\./usr/share/man/man1/redlock\.1\.gz$' \
      '^\./usr/share/bash-completion/completions/redlock$' '^\./usr/include/redlock/redlock\.hpp$' \
      "^\./usr/lib/.*/libredlock\.so\.$(project_version)\$" "^\./usr/lib/.*/$soname\$" \
      '^\./usr/lib/.*/libredlock\.so$' '^\./usr/lib/.*/cmake/redlock/redlockConfig\.cmake$' \
      '^\./usr/lib/.*/pkgconfig/redlock\.pc$' '^\./usr/share/redlock/.*\.json$' \
      '^\./usr/share/doc/redlock/copyright$'; do
    grep -qE "$wanted" <<<"$contents" || fail "$package has nothing like $wanted"
  done
  depends=$(dpkg-deb -f "$package" Depends)
  [[ $depends == *libhiredis* && $depends == *libuv* ]] ||
    fail "$package's Depends names no libhiredis or libuv: '$depends'"
  # The shared library's shlibs entry, for the packages that will link it.
  grep -qF "libredlock $(project_version | cut -d. -f1-2) redlock" <<<"$(dpkg-deb -I "$package" shlibs)" ||
    fail "$package has no shlibs entry for $soname"
  if [[ $(id -u) -eq 0 ]]; then
    # Resolves against the installed packages and apt's lists; installs nothing.
    apt-get install --simulate "$package" >/dev/null
  fi
  local deb_root=$root/$tree/extracted version man_errors
  rm -rf "$deb_root"
  dpkg -x "$package" "$deb_root"
  version=$(dpkg-deb -f "$package" Version)
  grep -qF "$version" <<<"$("$deb_root/usr/bin/redlock" --version)" ||
    fail "the packaged redlock --version does not say $version"
  # man's own errors, and its warnings about the page: kept whether or not man fails.
  if ! man_errors=$(man --warnings -l "$deb_root/usr/share/man/man1/redlock.1.gz" 2>&1 >/dev/null); then
    fail "man failed on the packaged man page: $man_errors"
  fi
  [[ -z $man_errors ]] || fail "the packaged man page: $man_errors"
  # The CMake package and redlock.pc, wherever the libdir landed, find their files.
  cmake -S tests/consumer -B "$tree/deb-consumer" -DCMAKE_PREFIX_PATH="$deb_root/usr" >/dev/null
  cmake --build "$tree/deb-consumer" >/dev/null
  "$tree/deb-consumer/redlock_consumer"
  local deb_pc_dir
  deb_pc_dir=$(dirname "$(find "$deb_root" -name redlock.pc)")
  deb_pc() { realpath "$(PKG_CONFIG_PATH=$deb_pc_dir pkg-config --variable="$1" redlock)"; }
  [[ $(deb_pc includedir) == "$deb_root/usr/include" && -e $(deb_pc libdir)/libredlock.so ]] ||
    fail "the packaged redlock.pc does not point at the packaged files"
}

# forget_other_compiler PRESET: CMake cannot change the compiler of a configured tree. Where the
# preset's tree was configured with other compilers than the ones the preset names (a tree of
# GCC, from before the sanitizer presets named clang), the tree is removed, to be configured and
# built afresh.
forget_other_compiler() {
  local preset=$1 named dir lang wanted cached
  # Three lines: the preset's tree, its C compiler, its C++ compiler (empty where not named).
  named=$(python3 - "$preset" <<'PY'
import json, sys
preset = {p["name"]: p for p in json.load(open("CMakePresets.json"))["configurePresets"]}[sys.argv[1]]
variables = preset.get("cacheVariables", {})
print(preset["binaryDir"].replace("${sourceDir}/", ""))
print(variables.get("CMAKE_C_COMPILER", ""))
print(variables.get("CMAKE_CXX_COMPILER", ""))
PY
  )
  dir=$(sed -n 1p <<<"$named")
  [[ -f $dir/CMakeCache.txt ]] || return 0
  for lang in C CXX; do
    if [[ $lang == C ]]; then wanted=$(sed -n 2p <<<"$named"); else wanted=$(sed -n 3p <<<"$named"); fi
    [[ -n $wanted ]] || continue
    cached=$(sed -n "s/^CMAKE_${lang}_COMPILER:[A-Z]*=//p" "$dir/CMakeCache.txt")
    # A language the project does not enable (C): a tree configured without the preset has no
    # line for it, one configured with the preset has the preset's word for it ("clang").
    [[ -n $cached ]] || continue
    # Each resolved to the file that runs (/usr/bin/c++ and /usr/bin/clang++ are links).
    wanted=$(realpath -e "$(command -v "$wanted" || echo "$wanted")" 2>/dev/null || echo "$wanted")
    cached=$(realpath -e "$(command -v "$cached" || echo "$cached")" 2>/dev/null || echo "$cached")
    if [[ $cached != "$wanted" ]]; then
      step "$dir was configured with $cached; preset $preset names $wanted: removing $dir"
      rm -rf "$dir"
      return 0
    fi
  done
}

stage_asan_ubsan() {
  forget_other_compiler asan-ubsan
  cmake --preset asan-ubsan "$unity" "$debug_info" >/dev/null
  # What the unit, integration and CLI labels run (with what those depend on), not the torture
  # and stress orchestrators, which run in the plain stage.
  local targets=(redlock_unit_tests redlock_integration_tests redlock_cli_tests redlock_torture_checks)
  if grep -q '^REDLOCK_BUILD_MAN:BOOL=ON' build/asan/CMakeCache.txt; then targets+=(redlock_man); fi
  cmake --build --preset asan-ubsan -j"$jobs" --target "${targets[@]}"
  step "built; the unit, integration and CLI tests"
  prebuild tsan build_tsan
  # The preset sets ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 and
  # UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 and selects -L "unit|integration|cli".
  run_ctest build/asan --preset asan-ubsan -j"$test_jobs"
}

# Shards of a doctest binary in parallel, each in a process of its own under `timeout`:
# run_shards BINARY LOG_DIR TIMEOUT SHARDS EXCLUDED_SUITE. The excluded suite gets a process of
# its own too. Its log names the test case that was running when a process died.
run_shards() {
  local binary=$1 dir=$2 limit=$3 shards=$4 apart=$5 count shard first last
  count=$("$binary" --count --test-suite-exclude="$apart" |
          sed -n 's/.*filters: \([0-9][0-9]*\).*/\1/p')
  [[ -n $count && $count -gt 0 ]] || fail "no test cases found in $binary"
  local pids=() ranges=()
  for ((shard = 0; shard < shards; shard++)); do
    first=$((count * shard / shards + 1))
    last=$((count * (shard + 1) / shards))
    ranges+=("cases $first-$last of $count")
    doctest_shard "$binary" "$dir/shard-$shard.log" "$limit" \
      --test-suite-exclude="$apart" --first="$first" --last="$last" &
    pids+=($!)
  done
  doctest_shard "$binary" "$dir/shard-$shards.log" "$limit" --test-suite="$apart" &
  pids+=($!)
  ranges+=("suite '$apart'")
  local failed=0 status log ran
  for shard in "${!pids[@]}"; do
    log=$dir/shard-$shard.log
    wait "${pids[$shard]}"
    status=$(cat "$log.status")
    if ((status == 0)); then
      ran=$(grep -cE '^ *<TestCase name="' "$log" || true)
      echo "tsan: shard $shard (${ranges[$shard]}): $ran cases," \
        "$(grep -E '^\[doctest\] assertions' "$log" || echo 'no doctest summary')"
    else
      failed=1
      report_shard "$log" "$status" "$limit" "TSan shard $shard (${ranges[$shard]})"
    fi
  done
  [[ $failed -eq 0 ]] || fail "TSan: a shard failed (above)"
}

build_tsan() {
  forget_other_compiler tsan
  cmake --preset tsan "$unity" "$debug_info" >/dev/null
  cmake --build --preset tsan -j"$jobs" --target redlock_integration_tests
}
stage_tsan() {
  # Every integration test drives a client whose loop thread meets the test's own threads (or
  # an attached loop), which is what TSan is for. They run as one process per shard, in
  # parallel; `ctest --preset tsan` runs every integration-labelled test instead.
  await_prebuild tsan build_tsan
  prebuild fuzz build_fuzz
  step "built; the shards"
  # The transport-fault suite forks children that start clients: TSan refuses a fork of a
  # process that already has threads (libuv's resolver pool, started by any earlier test that
  # resolved a host name), so that suite gets a fresh process of its own, beside the shards.
  # Two shards per core: like the plain suites, these mostly wait.
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  run_shards build/tsan/tests/redlock_integration_tests build/tsan 600 $((jobs * 2)) "transport faults"
}

# -O1 and line tables, asserts on: what fuzzing needs (as OSS-Fuzz builds), and about a third
# less compiling than RelWithDebInfo's -O2 -g.
build_fuzz() {
  CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DREDLOCK_BUILD_FUZZ=ON -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF \
    -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_BUILD_CLI=OFF -DREDLOCK_WERROR=OFF "$unity" >/dev/null
  cmake --build build/fuzz -j"$jobs"
}
stage_fuzz() {
  local fuzz=build/fuzz
  await_prebuild fuzz build_fuzz
  step "built; 60 s per target"
  mkdir -p "$fuzz/artifacts"
  local pids=() targets=(fuzz_config fuzz_reply fuzz_quorum) target i status failed=0
  for target in "${targets[@]}"; do
    # New inputs go to the working corpus under build/, never into the seeds in fuzz/corpus/.
    mkdir -p "$fuzz/corpus/$target"
    "$fuzz/fuzz/$target" -max_total_time=60 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$fuzz/artifacts/$target-" \
      "$fuzz/corpus/$target" "fuzz/corpus/$target" >"$fuzz/$target.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!targets[@]}"; do
    status=0
    wait "${pids[$i]}" || status=$?
    if ((status == 0)); then
      echo "fuzz: ${targets[$i]}: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$fuzz/${targets[$i]}.log" | tail -1 || true)"
    else
      failed=1
      record_failure "fuzz target" "${targets[$i]}" \
        "exit $status; the input: $(find "$fuzz/artifacts" -name "${targets[$i]}-*" | paste -sd ' ' || true)" \
        "$fuzz/${targets[$i]}.log"
      echo "fuzz: ${targets[$i]} FAILED; the input is in $fuzz/artifacts/, the log follows" >&2
      tail -60 "$fuzz/${targets[$i]}.log" >&2
    fi
  done
  [[ $failed -eq 0 ]] || fail "a fuzz target failed (above)"
}

# --- Stages that fail on purpose: the failure report's own tests (REDLOCK_TEST_ONLY only) ------
stage_selftest_ctest() {
  local src=$logs/selftest-src tree=$logs/selftest-build
  mkdir -p "$src"
  cat >"$src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.21)
project(selftest NONE)
enable_testing()
add_test(NAME selftest_passes COMMAND sh -c "echo fine")
add_test(NAME "selftest fails, with a seed" COMMAND sh -c
  "echo 'seed: 4242 (replay: REDLOCK_TORTURE_SEED=4242)'; echo 'run directory: /tmp/selftest-run'; i=1; while [ $i -le 60 ]; do echo \"selftest output line $i\"; i=$((i+1)); done; echo 'the last line before the failure' >&2; exit 3")
add_test(NAME selftest_times_out COMMAND sh -c "echo 'about to hang'; sleep 30")
set_tests_properties(selftest_times_out PROPERTIES TIMEOUT 2)
CMAKE
  cmake -S "$src" -B "$tree" >/dev/null
  run_ctest "$tree" --test-dir "$tree" -j3
}

selftest_inner() {
  # shellcheck disable=SC2012 # ls fails on purpose
  ls /nonexistent-redlock-selftest | sort
}
stage_selftest_command() {
  echo "selftest: a pipeline that fails in a function, under a stage"
  selftest_inner
  echo "selftest: not reached"
}

# A TSan shard's failure, without TSan: a doctest binary whose case ends the process as
# halt_on_error does (exit 66, stdout unflushed), and one that hangs past its timeout.
stage_selftest_tsan() {
  local dir=$logs/selftest-tsan
  mkdir -p "$dir"
  cat >"$dir/main.cpp" <<'CPP'
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <cstdio>
#include <unistd.h>
TEST_CASE("a case that passes") { CHECK(1 + 1 == 2); }
TEST_CASE("a case that fails a check") { CHECK(1 + 1 == 3); }
TEST_CASE("a case that meets a data race") {
    std::printf("buffered, lost at _exit\n");
    std::fputs("WARNING: ThreadSanitizer: data race (pid=1) [a fake report]\n"
               "SUMMARY: ThreadSanitizer: data race selftest.cpp:9 in fake\n", stderr);
    _exit(66);
}
TEST_CASE("a case after it") { CHECK(true); }
TEST_SUITE("hangs") { TEST_CASE("a case that hangs") { sleep(30); } }
CPP
  c++ -std=c++20 -DDOCTEST_CONFIG_USE_STD_HEADERS "$dir/main.cpp" -o "$dir/selftest_doctest"
  run_shards "$dir/selftest_doctest" "$dir" 3 2 hangs
}

all_stages=(deps plain-build plain-tests torture install packager asan-ubsan tsan fuzz)
extra_stages=(selftest-ctest selftest-command selftest-tsan)
declare -A stage_title=(
  [deps]="the packages, and CHANGELOG.md's entry for $(project_version)"
  [plain-build]="plain build (Debug, unity, -Werror) in $build"
  [plain-tests]="plain tests: every label but torture, unit, integration, cli (the benchmarks' smoke tests)"
  [torture]="torture-labelled tests, two at a time, alone"
  [install]="install, and a consumer built with find_package(redlock)"
  [packager]="packager's build (Release, shared, file by file, -Werror): SONAME, exports, RUNPATH, find_package, pkg-config; its Debian package"
  [asan-ubsan]="AddressSanitizer + UndefinedBehaviorSanitizer: unit, integration and CLI tests"
  [tsan]="ThreadSanitizer: the library's integration tests, in shards"
  [fuzz]="libFuzzer: 60 s per target"
  [selftest-ctest]="fails on purpose: a ctest run with a failing and a timed-out test"
  [selftest-command]="fails on purpose: a failing pipeline in a function"
  [selftest-tsan]="fails on purpose: doctest shards halted in a case and killed by their timeout"
)
run=("${all_stages[@]}")
if [[ -n ${REDLOCK_TEST_ONLY:-} ]]; then
  run=()
  for id in ${REDLOCK_TEST_ONLY//,/ }; do
    [[ -n ${stage_title[$id]+set} ]] ||
      fail "REDLOCK_TEST_ONLY: no stage '$id'; the stages: ${all_stages[*]} ${extra_stages[*]}"
  done
  for id in "${all_stages[@]}" "${extra_stages[@]}"; do
    [[ " ${REDLOCK_TEST_ONLY//,/ } " == *" $id "* ]] && run+=("$id")
  done
fi

# --- Running them, and the report -------------------------------------------------------------
declare -A stage_seconds stage_result
failed_stage=""
# run_stage ID: the stage, in a subshell with set -e, its output to the console and its log.
# Never call it in a condition (if, ||, &&): set -e would be off in the whole stage.
run_stage() {
  local id=$1 start=$SECONDS status
  echo "test: [$SECONDS s] stage $id: ${stage_title[$id]}"
  set +e
  (
    current_stage=$id
    set -e
    "stage_${id//-/_}"
  ) 2>&1 | tee "$logs/$id.log"
  status=${PIPESTATUS[0]}
  set -e
  stage_seconds[$id]=$((SECONDS - start))
  if ((status == 0)); then
    stage_result[$id]=passed
  else
    stage_result[$id]="FAILED (exit $status)"
  fi
  echo "test: stage $id: ${stage_result[$id]} in ${stage_seconds[$id]} s [$SECONDS s in all]"
}

# The report: the failures' details first, then the stages, then one line per failure: the end
# of the output (what CI shows) says what failed, whatever scrolled away above it.
final_report() {
  set +e
  local id n=0 lines stage kind name what file
  if [[ -n $failed_stage ]]; then
    echo
    echo "test: ======== failure report (logs: $logs/) ========"
    [[ -s $logs/failures.tsv ]] && n=$(wc -l <"$logs/failures.tsv")
    # About 55 lines for the details of all failures, at least 8 for each.
    lines=30
    ((n > 1)) && lines=$((55 / n - 5))
    ((lines < 8)) && lines=8
    if ((n > 0)); then
      while IFS=$'\t' read -r stage kind name what file; do
        echo "test: [$stage] $kind \"$name\": $what"
        if [[ -n $file && -s $file ]]; then
          local marks
          # A randomized test's seed, replay command and run directory, wherever they are.
          marks=$(grep -m5 -iE 'seed|replay|run dir|faults\.log|kept in' "$file" || true)
          [[ -n $marks ]] && printf '  | %s\n' "${marks//$'\n'/$'\n'  | }"
          echo "  last $lines lines of its output ($file):"
          tail -"$lines" "$file" | cut -c1-300 | sed 's/^/  > /'
        fi
      done <"$logs/failures.tsv"
    else
      echo "test: the last 30 lines of stage $failed_stage ($logs/$failed_stage.log):"
      tail -30 "$logs/$failed_stage.log" | cut -c1-300 | sed 's/^/  > /'
    fi
  fi
  echo
  echo "test: ======== stages ========"
  printf 'test:   %-16s %7s  %s\n' stage seconds result
  for id in "${run[@]}"; do
    printf 'test:   %-16s %7s  %s\n' "$id" "${stage_seconds[$id]:--}" "${stage_result[$id]:-not run}"
  done
  if [[ -z $failed_stage ]]; then
    echo "test: all passed in $SECONDS s"
    return 0
  fi
  echo "test: FAILED in stage $failed_stage (${stage_title[$failed_stage]}), after $SECONDS s"
  if [[ -s $logs/errors.tsv ]]; then
    # The first command that failed, and where its failure went.
    while IFS=$'\t' read -r stage what; do
      echo "test: [$stage] $what"
    done < <(head -4 "$logs/errors.tsv")
  fi
  if ((n > 0)); then
    echo "test: what failed ($n):"
    awk -F'\t' 'NR <= 15 { printf "test:   [%s] %s \"%s\"\n", $1, $2, $3 }' "$logs/failures.tsv"
    ((n > 15)) && echo "test:   ... and $((n - 15)) more: $logs/failures.tsv"
  fi
  echo "test: the whole output of each stage is in $logs/<stage>.log"
}

for id in "${run[@]}"; do
  run_stage "$id"
  if [[ ${stage_result[$id]} != passed ]]; then
    failed_stage=$id
    break
  fi
done
final_report
[[ -z $failed_stage ]]
