#!/bin/sh
# tests/run_suite.sh against stand-in suites: a pass, a skip, a failure beside a skip, a crash.
runner="$(dirname "$0")/run_suite.sh"
fails=0
expect() {  # expect CODE COMMAND...
  want=$1
  shift
  "$runner" "$@" >/dev/null 2>&1
  got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $* exited $got, want $want"
    fails=$((fails + 1))
  fi
}
expect 0 sh -c 'echo "[  PASSED  ] 2 tests."'
expect 77 sh -c 'echo "[  SKIPPED ] 1 test, listed below:"; echo "[  PASSED  ] 1 test."'
expect 1 sh -c 'echo "[  SKIPPED ] 1 test, listed below:"; echo "[  FAILED  ] 1 test"; exit 1'
expect 134 sh -c 'echo "[  SKIPPED ] 1 test, listed below:"; kill -ABRT $$'
# Its output passes through.
out=$("$runner" sh -c 'echo one; echo two >&2')
[ "$out" = "$(printf 'one\ntwo')" ] || { echo "FAIL: output '$out'"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "run_suite.sh: 5 of 5 as expected"
exit "$fails"
