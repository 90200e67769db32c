#!/usr/bin/env bash
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer (at -O2 with debug
# info: sanitizers stay exact, the 100,000-step property tests stay quick) and runs every
# test (unit, integration against real redis-server/prometheus, benchmark smoke runs).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TESSERA_TEST_BUILD:-build-test}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=ON >/dev/null
cmake --build "$build"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
