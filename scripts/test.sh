#!/usr/bin/env bash
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer and runs every
# test (unit, integration against real redis-server/prometheus, benchmark smoke runs).
#
# The sanitizer build is -O1 -g1, not RelWithDebInfo's -O2 -g: -O1 is what ASan's own docs
# advise, and it halves the compile, which is most of this script's time on two cores
# (docs/benchmarks.md, "The test command"); -g1 keeps the file:line of every report's stack.
# The tests' own code (tests/, fuzz/, bench/) is compiled at -Og: a third off its compile, and
# the suite's time is spent in the modules under test, which keep -O1 (CMakeLists.txt).
# UBSan's checks trap (TESSERA_UBSAN_TRAP): each still stops the program at its line, and
# handle_sigill=1 has ASan print the stack; the records behind UBSan's messages made the binaries'
# writable data 100 times larger, paid at each of the suite's ~1,300 process starts and exits
# (docs/benchmarks.md). For the check's own message, rebuild with -DTESSERA_UBSAN_TRAP=OFF.
#
# For the integration tests (CTest label `integration`) scripts/harness.sh starts, on free
# loopback ports in a fresh temporary directory: a redis-server, a `tessera agent` on the fake
# GPU node tests/agent/fake_node.yaml publishing to that Redis, and a prometheus scraping the
# agent every second. Their addresses reach the tests as TESSERA_TEST_* environment variables
# (without them the integration tests skip). Everything started there is stopped on exit, also
# on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TESSERA_TEST_BUILD:-build-test}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DTESSERA_SANITIZE=ON -DTESSERA_UBSAN_TRAP=ON \
  -DTESSERA_TEST_CODE_FLAGS=-Og >/dev/null
cmake --build "$build"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:handle_sigill=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# shellcheck source=scripts/harness.sh
source scripts/harness.sh

# One test more than cores: the cluster in a box's two runs (about 260 s of the suite) and the
# flag harness's daemons mostly wait, and a third slot keeps both cores busy beside them
# (docs/benchmarks.md, "The test command").
if ! ctest --test-dir "$build" --output-on-failure -j"$(($(nproc) + 1))"; then
  harness_logs
  exit 1
fi
