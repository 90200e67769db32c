#!/usr/bin/env bash
# Coverage-guided fuzzing of the fuzz targets (fuzz/) with AFL++ (Debian's afl++), each for
# FUZZ_SECONDS (default 1800) from its seed corpus, two at a time, under ASan/UBSan; prints
# executions, rate, coverage and findings per target, and fails if any target crashed or hung.
# Not part of the test command (which runs each target's 10 s mutation smoke run instead):
# run it by hand or nightly. Usage: scripts/fuzz.sh [TARGET...]   (default: all ten)
#
# Instrumentation: afl-g++ (AFL++'s assembler-level mode around GCC 12, so the C++23 code
# builds as it does everywhere else). Debian 12's afl-g++-fast refuses GCC 12.2's plugin ABI
# ("GCC and plugin have incompatible versions"), and clang 14 cannot compile libstdc++ 12's
# <expected>, so neither the GCC plugin nor libFuzzer is available here; each input is run by
# the driver's file mode (afl-fuzz ... -- fuzz_<target> @@) under AFL's fork server.
#
# FUZZ_SANITIZE=0 builds without ASan/UBSan (into build-fuzz-plain): each fork is then far
# cheaper, so the same minutes try many more inputs, but only crashes the code itself detects
# (an abort, a TESSERA_CHECK, a segfault) are found. Run both: plain for reach, sanitized for
# depth (replay the plain run's queue through the sanitized build to check it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh afl++
sanitize=${FUZZ_SANITIZE:-1}
if [ "$sanitize" = 0 ]; then default_build=build-fuzz-plain; else default_build=build-fuzz; fi
build=${TESSERA_FUZZ_BUILD:-$default_build}
seconds=${FUZZ_SECONDS:-1800}
out=${FUZZ_OUT:-$build/findings}
all=(openb_pods openb_nodes apps_yaml profile_csv fake_node pod extender_body kubeconfig
  watch_stream grammar)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

sanitize_flag=ON
[ "$sanitize" = 0 ] && sanitize_flag=OFF
CXX=afl-g++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_SANITIZE=$sanitize_flag -DTESSERA_BENCH=OFF >/dev/null
AFL_QUIET=1 cmake --build "$build" --target "${targets[@]/#/fuzz_}"

export AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_SKIP_BIN_CHECK=1  # the driver is instrumented, its shared libraries are not
export ASAN_OPTIONS=abort_on_error=1:symbolize=0:detect_leaks=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1
mkdir -p "$out"
run() {
  local t=$1
  rm -rf "${out:?}/$t"
  afl-fuzz -i "fuzz/corpus/$t" -o "$out/$t" -V "$seconds" -m none -t 2000 \
    -- "$build/fuzz/fuzz_$t" @@ >"$out/$t.log" 2>&1 || true
}
pids=()
for t in "${targets[@]}"; do
  run "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait

stat() { grep -E "^$2 " "$1" | sed 's/.*: //'; }
printf '%-14s %12s %10s %8s %8s %6s\n' target executions per_s edges crashes hangs
bad=0
for t in "${targets[@]}"; do
  f="$out/$t/default/fuzzer_stats"
  if [ ! -f "$f" ]; then
    echo "$t: afl-fuzz did not run; its log: $out/$t.log" >&2
    bad=1
    continue
  fi
  printf '%-14s %12s %10s %8s %8s %6s\n' "$t" "$(stat "$f" execs_done)" \
    "$(stat "$f" execs_per_sec)" "$(stat "$f" edges_found)" "$(stat "$f" saved_crashes)" \
    "$(stat "$f" saved_hangs)"
  if [ "$(stat "$f" saved_crashes)" != 0 ] || [ "$(stat "$f" saved_hangs)" != 0 ]; then bad=1; fi
done
[ $bad -eq 0 ] || echo "fuzz.sh: findings under $out/<target>/default/{crashes,hangs}" >&2
exit $bad
