#!/usr/bin/env bash
# Renders a report page (report.html of `tessera simulate --out DIR`) to a PNG with headless
# Chromium (Debian package `chromium`), for the documentation:
#   scripts/screenshot.sh /tmp/thesis-report/report.html docs/img/thesis-report.png [1280,2000]
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 PAGE.html OUT.png [WIDTH,HEIGHT]" >&2
  exit 2
fi
page=$(realpath "$1")
out=$(realpath -m "$2")
size=${3:-1280,2000}
command -v chromium >/dev/null || { echo "$0: chromium is not installed (apt-get install chromium)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
# A throwaway profile, so the run neither reads nor leaves a user's browser state.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
  --screenshot="$out" --window-size="$size" "file://$page" 2>/dev/null
[[ -s "$out" ]] || { echo "$0: no screenshot written to $out" >&2; exit 1; }
echo "wrote $out"
