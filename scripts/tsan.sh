#!/usr/bin/env bash
# ThreadSanitizer over the code that runs threads: the daemons' tests (k8s: informers, Lease
# renewal, the extender under concurrent clients, the scheduler process; agent: its loop, HTTP
# server and publishing; store: the Redis client) and the agent the harness starts, which is
# built with TSan too. Not part of the test command (it rebuilds those modules with another
# sanitizer; docs/benchmarks.md says how long it takes): run it by hand or in a nightly job.
# Every report fails the run (halt_on_error).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TESSERA_TSAN_BUILD:-build-tsan}
binaries=(k8s_tests agent_tests agent_integration_tests store_tests store_integration_tests)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_TSAN=ON \
  -DTESSERA_BENCH=OFF >/dev/null
cmake --build "$build" --target tessera metrics_file_exporter "${binaries[@]}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp"

# shellcheck source=scripts/harness.sh
source scripts/harness.sh

failed=()
for b in "${binaries[@]}"; do
  echo "== $b"
  if ! "$build/tests/$b" --gtest_brief=1; then failed+=("$b"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "tsan.sh: failed: ${failed[*]}" >&2
  harness_logs
  exit 1
fi
echo "tsan.sh: every daemon test passed under ThreadSanitizer"
