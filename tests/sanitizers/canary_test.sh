#!/bin/sh
# The sanitizers of the test command's build stop each error of sanitizer_canary and name the
# function and file where it happened; the same program without an error exits 0. Run by CTest
# with the environment of scripts/test.sh (ASAN_OPTIONS with handle_sigill=1, so that a UBSan
# trap is reported by ASan with its stack).
# usage: canary_test.sh BIN
bin=$1
failed=0
expect() {  # expect MODE PATTERN...: the run fails, and its report holds every pattern
  mode=$1
  shift
  out=$("$bin" "$mode" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "FAIL $mode: exited 0; no sanitizer stopped it"
    failed=1
    return
  fi
  for pattern in "$@"; do
    if ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
      echo "FAIL $mode: exit $rc, the report lacks '$pattern':"
      printf '%s\n' "$out" | head -20
      failed=1
      return
    fi
  done
  echo "ok   $mode: exit $rc"
}
expect signed-overflow "SignedOverflow" "canary.cc:"
expect shift "ShiftTooFar" "canary.cc:"
expect heap "heap-buffer-overflow" "HeapOverflow" "canary.cc:"
expect global "global-buffer-overflow" "GlobalOverflow" "canary.cc:"
expect use-after-free "heap-use-after-free" "UseAfterFree" "canary.cc:"
expect leak "detected memory leaks" "Leak" "canary.cc:"
if ! out=$("$bin" none 2>&1); then
  echo "FAIL none: the program without an error failed:"
  printf '%s\n' "$out"
  failed=1
else
  echo "ok   none"
fi
exit "$failed"
