#!/usr/bin/env bash
# Checks that a change to a hot path leaves every answer as it was (issue #39): runs the same
# experiments with two tessera binaries and compares their --json output, wall- and CPU-time
# fields aside. Usage: tools/perf/same_outputs.sh OLD_TESSERA NEW_TESSERA [OPENB_DIR]
# (OPENB_DIR defaults to ../shared/data/openb). Exits 1 naming each run that differs. Takes
# about five minutes a binary on two cores (thesis-scale 20,000 with six policies dominates).
set -euo pipefail
old=$1 new=$2 openb=${3:-../shared/data/openb}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
strip() {
  python3 -c '
import json, sys
def s(x):
    if isinstance(x, dict):
        return {k: s(v) for k, v in x.items() if k not in ("wall_s", "cpu_s", "elapsed_s")}
    if isinstance(x, list):
        return [s(v) for v in x]
    return x
print(json.dumps(s(json.load(sys.stdin)), sort_keys=True, indent=0))'
}
runs=(
  "default|simulate --json"
  "openb-default|simulate --experiment openb-alloc --trace $openb/openb_pod_list_default.csv --json"
  "openb-gpushare80|simulate --experiment openb-alloc --trace $openb/openb_pod_list_gpushare80.csv --json"
  "openb-multigpu20|simulate --experiment openb-alloc --trace $openb/openb_pod_list_multigpu20.csv --json"
  "openb-defrag|simulate --experiment openb-defrag --trace $openb/openb_pod_list_default.csv --json"
  "thesis-scale-20k|simulate --experiment thesis-scale --workloads 20000 --json"
  "packing|simulate --experiment packing --seeds 1-2 --json"
  "disaggregation|simulate --experiment disaggregation --seeds 1-1 --json"
)
status=0
for run in "${runs[@]}"; do
  name=${run%%|*} args=${run#*|}
  # shellcheck disable=SC2086  # the arguments are meant to split
  "$old" $args 2>/dev/null | strip >"$out/$name.old"
  # shellcheck disable=SC2086
  "$new" $args 2>/dev/null | strip >"$out/$name.new"
  if cmp -s "$out/$name.old" "$out/$name.new"; then
    echo "same     $name ($(wc -c <"$out/$name.new") bytes)"
  else
    echo "DIFFERS  $name"
    status=1
  fi
done
exit $status
