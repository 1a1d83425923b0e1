#!/usr/bin/env bash
# The README's second command: install what is missing, build with warnings as
# errors, run every test (against real redis-server processes the tests start
# themselves): the torture and benchmark smoke tests on a plain build, then check
# that an installed copy works with find_package(redlock), and that a shared one
# (BUILD_SHARED_LIBS) does too, with its SONAME, only the public API exported, and
# its pkg-config file; and that the Debian package (cpack -G DEB) holds what it
# should, resolves its dependencies and works once extracted. Then the suites under
# sanitizers, and a minute of fuzzing per target:
#   - ASan + UBSan (leaks included): unit, integration and CLI tests, each run once, here
#     (CMakePresets.json: asan-ubsan; the CLI tests run the instrumented `redlock` binary);
#   - TSan: the integration tests again, where the client's loop thread meets the callers'
#     threads (CMakePresets.json: tsan);
#   - libFuzzer (clang): each target in fuzz/ for 60 s, from its seeds in fuzz/corpus/.
# Any sanitizer report fails the run, as does a crash found by a fuzzer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

REDLOCK_WITH_CLANG=1 scripts/install-deps.sh
command -v redis-server >/dev/null || { echo "test: redis-server is missing" >&2; exit 1; }
jobs=$(nproc)
# Unity builds (CMAKE_UNITY_BUILD: a few source files per compiler run) build the tree in less
# than half the time; the shared-library stage builds the library file by file, so that each
# file still compiles on its own. A name that two files of one target both define at file
# scope (an anonymous namespace's constant, say) breaks a unity build: give it one home.
unity=-DCMAKE_UNITY_BUILD=ON
# Debug trees carry line tables only (-g1, not -g): enough for a sanitizer's or a debugger's
# stack trace with file and line, and each compiler run is about an eighth shorter.
debug_info=-DCMAKE_CXX_FLAGS_DEBUG=-g1
# Tests mostly wait (on servers, timers, child processes): at three per core the plain suites
# keep the two cores about half busy and take half the time they take at one per core.
test_jobs=$((jobs * 3))
stage() {
  echo "test: [$SECONDS s] $1"
}
# The version of project() in CMakeLists.txt: what --version, the CMake package, redlock.pc and
# the .deb must all say, and the newest entry of CHANGELOG.md.
project_version() {
  sed -n 's/^project(redlock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt
}
grep -q "^## \[.*$(project_version)" CHANGELOG.md \
  || { echo "test: CHANGELOG.md has no entry for $(project_version)" >&2; exit 1; }

stage "plain build (Debug, -Werror) and every test"
build=build/test
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_WERROR=ON \
  -DREDLOCK_TORTURE_SERIAL=OFF "$unity" "$debug_info" >/dev/null
cmake --build "$build" -j"$jobs"
# The unit, integration and CLI tests run once, instrumented, in the sanitizer stage below
# (ASan + UBSan catch all a plain run would, and more); here, the rest in parallel (the
# benchmarks' smoke tests, and any label added later), then the torture-labelled tests two at
# a time, with nothing else running (their load must not skew other tests' timing bounds, and
# they pass side by side): the torture test, the cluster-member torture test and the CLI stress
# test (about 125, 70 and 105 s) take about 180 s so, where the torture and CLI stress tests
# alone took 125 s side by side and 195 s one after the other.
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
(cd "$build" && ctest --output-on-failure -j"$test_jobs" --timeout 300 -LE 'torture|unit|integration|cli')
(cd "$build" && ctest --output-on-failure -j2 -L torture)

stage "install, and a consumer built with find_package(redlock)"
prefix=$root/$build/install-tree
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S tests/consumer -B "$build/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build/consumer" >/dev/null
"$build/consumer/redlock_consumer"
# One version everywhere: the installed CLI, the CMake package's version file, redlock.pc.
[[ $("$prefix/bin/redlock" --version) == *"$(project_version)"* ]] \
  || { echo "test: redlock --version is not $(project_version)" >&2; exit 1; }
grep -q "PACKAGE_VERSION \"$(project_version)\"" "$(find "$prefix" -name redlockConfigVersion.cmake)" \
  || { echo "test: the CMake package's version is not $(project_version)" >&2; exit 1; }
grep -q "^Version: $(project_version)$" "$(find "$prefix" -name redlock.pc)" \
  || { echo "test: redlock.pc's version is not $(project_version)" >&2; exit 1; }
# The man page names the example configs under the prefix it was installed to.
grep -qF "$prefix/share/redlock/" "$prefix/share/man/man1/redlock.1" \
  || { echo "test: the installed man page does not name $prefix/share/redlock/" >&2; exit 1; }
[[ -f $prefix/share/doc/redlock/copyright ]] \
  || { echo "test: no share/doc/redlock/copyright installed" >&2; exit 1; }
# The installed CLI, run outside the checkout with no config anywhere, exits 78 and
# points at the example configs it installed.
nowhere=$(mktemp -d)
set +e
message=$(cd "$nowhere" && env -u REDLOCK_CONFIG -u XDG_CONFIG_HOME HOME="$nowhere" \
          "$prefix/bin/redlock" check 2>&1)
status=$?
set -e
rm -rf "$nowhere"
if [[ ! -e /etc/redlock/config.json ]] && { [[ $status != 78 ]] || [[ $message != *"$prefix/share/redlock"* ]]; }; then
  echo "test: the installed redlock without a config: exit $status, '$message'" >&2; exit 1
fi

stage "shared library, file by file: installed with a SONAME, the public API only, used by find_package and pkg-config"
shared=build/test-shared
# The library and the CLI only: the tests and benchmarks built file by file would add minutes
# and check nothing the unity-built plain stage does not.
cmake -S . -B "$shared" -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_WERROR=ON -DBUILD_SHARED_LIBS=ON \
      -DREDLOCK_BUILD_CLI=ON -DREDLOCK_BUILD_MAN=OFF -DREDLOCK_BUILD_EXAMPLES=OFF \
      -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF "$debug_info" >/dev/null
cmake --build "$shared" -j"$jobs"
shared_prefix=$root/$shared/install-tree
rm -rf "$shared_prefix"
cmake --install "$shared" --prefix "$shared_prefix" >/dev/null
shared_lib=$(find "$shared_prefix" -name 'libredlock.so.*.*.*')
soname=libredlock.so.$(project_version | cut -d. -f1-2)  # 0.x: major.minor (CHANGELOG.md)
# A producer's output is read whole before grep -q looks at it: piped, grep -q exits at its first
# match, the producer's next write gets SIGPIPE, and pipefail fails the run with no message (ldd
# then exits 1: what CI hit once, at random).
grep -qF "Library soname: [$soname]" <<<"$(readelf -d "$shared_lib")" \
  || { echo "test: $shared_lib has no SONAME $soname" >&2; exit 1; }
# Hidden visibility: no function, vtable or typeinfo of the internals (redlock::detail) is exported (a
# public signature may still name a detail type, as client's private constructor does).
if nm -DC --defined-only "$shared_lib" | cut -d' ' -f3- \
    | grep -E '^((typeinfo( name)?|vtable) for )?redlock::detail::'; then
  echo "test: $shared_lib exports internals" >&2; exit 1
fi
# The installed CLI starts from the scratch prefix with no LD_LIBRARY_PATH: a relative RUNPATH
# ($ORIGIN/../lib) finds the library beside it, as it would under ~/.local.
grep -q "$(project_version)" <<<"$(env -u LD_LIBRARY_PATH "$shared_prefix/bin/redlock" --version)" \
  || { echo "test: $shared_prefix/bin/redlock does not start from its prefix" >&2; exit 1; }
grep -q 'RUNPATH.*\$ORIGIN/\.\./lib' <<<"$(readelf -d "$shared_prefix/bin/redlock")" \
  || { echo "test: $shared_prefix/bin/redlock has no relative RUNPATH" >&2; exit 1; }
cmake -S tests/consumer -B "$shared/consumer" -DCMAKE_PREFIX_PATH="$shared_prefix" >/dev/null
cmake --build "$shared/consumer" >/dev/null
grep -q "$shared_prefix/.*libredlock\.so\.0" <<<"$(ldd "$shared/consumer/redlock_consumer")" \
  || { echo "test: the consumer does not load libredlock.so.0 from $shared_prefix" >&2; exit 1; }
"$shared/consumer/redlock_consumer"
pc_dir=$(dirname "$(find "$shared_prefix" -name redlock.pc)")
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
c++ -std=c++20 tests/consumer/main.cpp -o "$shared/consumer/redlock_consumer_pc" \
    $(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs redlock) -Wl,-rpath,"$(dirname "$shared_lib")"
"$shared/consumer/redlock_consumer_pc"

stage "Debian package: cpack -G DEB, its contents and Depends, installable, and what it installs works"
# Release, library and CLI only (with the man page), under /usr: what a user builds it from.
deb=build/test-deb
cmake -S . -B "$deb" -DCMAKE_BUILD_TYPE=Release -DREDLOCK_WERROR=ON -DCMAKE_INSTALL_PREFIX=/usr \
      -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF -DREDLOCK_BUILD_EXAMPLES=OFF \
      -DREDLOCK_BUILD_CLI=ON -DREDLOCK_BUILD_MAN=ON "$unity" >/dev/null
cmake --build "$deb" -j"$jobs"
rm -f "$deb"/redlock_*.deb
(cd "$deb" && cpack -G DEB >/dev/null)
package=$(find "$root/$deb" -maxdepth 1 -name 'redlock_*.deb')
[[ -f $package ]] || { echo "test: cpack made no single redlock_*.deb in $deb" >&2; exit 1; }
contents=$(dpkg-deb --contents "$package" | awk '{print $6}')
for wanted in '^\./usr/bin/redlock$' '^\./usr/share/man/man1/redlock\.1\.gz$' \
    '^\./usr/share/bash-completion/completions/redlock$' '^\./usr/include/redlock/redlock\.hpp$' \
    '^\./usr/lib/.*/libredlock\.a$' '^\./usr/lib/.*/cmake/redlock/redlockConfig\.cmake$' \
    '^\./usr/lib/.*/pkgconfig/redlock\.pc$' '^\./usr/share/redlock/.*\.json$' \
    '^\./usr/share/doc/redlock/copyright$'; do
  grep -qE "$wanted" <<<"$contents" || { echo "test: $package has nothing like $wanted" >&2; exit 1; }
done
depends=$(dpkg-deb -f "$package" Depends)
[[ $depends == *libhiredis* && $depends == *libuv* ]] ||
  { echo "test: $package's Depends names no libhiredis or libuv: '$depends'" >&2; exit 1; }
if [[ $(id -u) -eq 0 ]]; then
  # Resolves against the installed packages and apt's lists; installs nothing.
  apt-get install --simulate "$package" >/dev/null
fi
deb_root=$root/$deb/extracted
rm -rf "$deb_root"
dpkg -x "$package" "$deb_root"
version=$(dpkg-deb -f "$package" Version)
grep -qF "$version" <<<"$("$deb_root/usr/bin/redlock" --version)" ||
  { echo "test: the packaged redlock --version does not say $version" >&2; exit 1; }
man_errors=$(man --warnings -l "$deb_root/usr/share/man/man1/redlock.1.gz" 2>&1 >/dev/null)
[[ -z $man_errors ]] || { echo "test: the packaged man page: $man_errors" >&2; exit 1; }
# The CMake package and redlock.pc, wherever the libdir landed, find their files.
cmake -S tests/consumer -B "$deb/consumer" -DCMAKE_PREFIX_PATH="$deb_root/usr" >/dev/null
cmake --build "$deb/consumer" >/dev/null
"$deb/consumer/redlock_consumer"
deb_pc_dir=$(dirname "$(find "$deb_root" -name redlock.pc)")
deb_pc() { realpath "$(PKG_CONFIG_PATH=$deb_pc_dir pkg-config --variable="$1" redlock)"; }
[[ $(deb_pc includedir) == "$deb_root/usr/include" && -f $(deb_pc libdir)/libredlock.a ]] ||
  { echo "test: the packaged redlock.pc does not point at the packaged files" >&2; exit 1; }

stage "AddressSanitizer + UndefinedBehaviorSanitizer: unit, integration and CLI tests"
cmake --preset asan-ubsan "$unity" "$debug_info" >/dev/null
cmake --build --preset asan-ubsan -j"$jobs"
# The preset sets ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 and
# UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 and selects -L "unit|integration|cli".
ctest --preset asan-ubsan -j"$test_jobs"

stage "ThreadSanitizer: the library's integration tests"
# Every one of them drives a client whose loop thread meets the test's own threads (or an
# attached loop), which is what TSan is for. They run as one process per shard, in
# parallel; `ctest --preset tsan` runs every integration-labelled test instead.
cmake --preset tsan "$unity" "$debug_info" >/dev/null
cmake --build --preset tsan -j"$jobs" --target redlock_integration_tests
tsan_tests=build/tsan/tests/redlock_integration_tests
# The transport-fault suite forks children that start clients: TSan refuses a fork of a
# process that already has threads (libuv's resolver pool, started by any earlier test that
# resolved a host name), so that suite gets a fresh process of its own, beside the shards.
forking_suite="transport faults"
count=$("$tsan_tests" --count --test-suite-exclude="$forking_suite" |
        sed -n 's/.*filters: \([0-9][0-9]*\).*/\1/p')
[[ -n $count && $count -gt 0 ]] || { echo "test: no TSan test cases found" >&2; exit 1; }
pids=()
ranges=()
# Two shards per core: like the plain suites, these mostly wait.
shards=$((jobs * 2))
for ((shard = 0; shard < shards; shard++)); do
  first=$((count * shard / shards + 1))
  last=$((count * (shard + 1) / shards))
  ranges+=("$first-$last")
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    timeout 600 "$tsan_tests" --test-suite-exclude="$forking_suite" --first="$first" \
    --last="$last" >"build/tsan/shard-$shard.log" 2>&1 &
  pids+=($!)
done
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  timeout 600 "$tsan_tests" --test-suite="$forking_suite" >"build/tsan/shard-$shards.log" 2>&1 &
pids+=($!)
ranges+=("suite '$forking_suite'")
failed=0
for shard in "${!pids[@]}"; do
  if wait "${pids[$shard]}"; then
    # doctest's summary counts every case; the shard ran cases ${ranges[$shard]} of $count.
    echo "tsan: shard $shard (${ranges[$shard]}, of $count cases and the forking suite):" \
      "$(grep -E '^\[doctest\] assertions' "build/tsan/shard-$shard.log")"
  else
    failed=1
    echo "tsan: shard $shard FAILED; its log follows" >&2
    grep -vE '^(\[doctest\] (doctest version|run with)|=+)$' "build/tsan/shard-$shard.log" |
      tail -150 >&2
  fi
done
[[ $failed -eq 0 ]] || exit 1

stage "libFuzzer: 60 s per target"
fuzz=build/fuzz
CC=clang CXX=clang++ cmake -S . -B "$fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DREDLOCK_BUILD_FUZZ=ON -DREDLOCK_BUILD_TESTS=OFF -DREDLOCK_BUILD_BENCH=OFF \
  -DREDLOCK_BUILD_EXAMPLES=OFF -DREDLOCK_BUILD_CLI=OFF -DREDLOCK_WERROR=OFF "$unity" >/dev/null
cmake --build "$fuzz" -j"$jobs"
mkdir -p "$fuzz/artifacts"
pids=()
targets=(fuzz_config fuzz_reply fuzz_quorum)
for target in "${targets[@]}"; do
  # New inputs go to the working corpus under build/, never into the seeds in fuzz/corpus/.
  mkdir -p "$fuzz/corpus/$target"
  "$fuzz/fuzz/$target" -max_total_time=60 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$fuzz/artifacts/$target-" \
    "$fuzz/corpus/$target" "fuzz/corpus/$target" >"$fuzz/$target.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  if wait "${pids[$i]}"; then
    echo "fuzz: ${targets[$i]}: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$fuzz/${targets[$i]}.log" | tail -1)"
  else
    failed=1
    echo "fuzz: ${targets[$i]} FAILED; the input is in $fuzz/artifacts/, the log follows" >&2
    tail -60 "$fuzz/${targets[$i]}.log" >&2
  fi
done
[[ $failed -eq 0 ]] || exit 1

stage "done"
echo "test: all passed in $SECONDS s"
