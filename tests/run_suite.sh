#!/bin/sh
# Runs one GoogleTest suite for CTest (tests/gtest_suites.cmake): `run_suite.sh BIN ARGS...`.
# Exits as BIN did, except 77 (the tests' SKIP_RETURN_CODE) when BIN passed with a case
# skipped. A skip therefore never hides a failure in the same suite, which CTest's
# SKIP_REGULAR_EXPRESSION did: it marks a test skipped whatever its exit code.
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?
cat "$log"
if [ "$rc" -eq 0 ] && grep -q '^\[  SKIPPED \]' "$log"; then
  exit 77
fi
exit "$rc"
