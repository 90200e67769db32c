#!/usr/bin/env bash
# Peak resident memory of `tessera extender` under hostile bodies (issue #33): starts an
# extender (memory store, no API server) on a free loopback port, sends N concurrent bodies of
# the largest size it accepts (4 MiB), and prints its VmHWM (peak RSS) from /proc; three runs,
# each a fresh process, and their median. Bash only (a fresh Debian has no python3).
#
#   scripts/extender_rss.sh [BUILD_DIR] [KIND] [N]
#     KIND nested: "[[[[…"  (nesting; refused unparsed since #33)
#          wide:   "[[],[],…]" (width; parsed, two at a time since #33)
# Prints "KIND N: run1 run2 run3 MB, median M MB". Not a test: a measurement to report. Use a
# build without sanitizers (AddressSanitizer's shadow memory and quarantine inflate RSS).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-h}
kind=${2:-nested}
n=${3:-8}
size=$((4 << 20))
dir=$(mktemp -d "${TMPDIR:-/tmp}/tessera-rss.XXXXXX")
trap 'rm -rf "$dir"' EXIT

case $kind in
  nested) head -c "$size" /dev/zero | tr '\0' '[' >"$dir/body" ;;
  wide)
    k=$(((size - 2) / 3))
    # `yes` ends on SIGPIPE once head has its lines: not a failure (pipefail would make it one).
    { printf '['; yes '[],' | head -n $((k - 1)) | tr -d '\n'; printf '[]]'; } >"$dir/body" || true
    ;;
  *) echo "extender_rss.sh: KIND is nested or wide" >&2; exit 2 ;;
esac

free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12000))  # below the ephemeral range (scripts/harness.sh)
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

# post PORT: one POST /filter of the body; prints the status line.
post() {
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf 'POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n' \
    "$(stat -c %s "$dir/body")" >&3
  cat "$dir/body" >&3
  head -1 <&3
  exec 3>&-
}

runs=()
for run in 1 2 3; do
  port=$(free_port)
  "$build/tessera" extender --store memory --no-api --listen "127.0.0.1:$port" \
    >"$dir/log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  for i in $(seq "$n"); do post "$port" >"$dir/status.$i" & done
  wait $(jobs -p | grep -v "^$pid$") 2>/dev/null || true
  hwm=$(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$pid/status")
  kill -TERM "$pid"
  wait "$pid" || true
  runs+=("$hwm")
  echo "run $run: $(sort "$dir"/status.* | uniq -c | tr -s ' ' | tr '\n' ';') VmHWM ${hwm} MB" >&2
done
sorted=($(printf '%s\n' "${runs[@]}" | sort -n))
echo "$kind $n: ${runs[*]} MB, median ${sorted[1]} MB"
