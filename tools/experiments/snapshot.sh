#!/usr/bin/env bash
# Runs every experiment of `tessera simulate` with two seeds and writes what it prints (--json,
# or the table where an experiment has no JSON) into DIR, one file each, with wall-time fields
# blanked. Two snapshots taken before and after a refactor must be byte-identical:
#   tools/experiments/snapshot.sh build/tessera /tmp/before
#   ... change ...
#   tools/experiments/snapshot.sh build/src/cli/tessera /tmp/after && diff -r /tmp/before /tmp/after
set -euo pipefail
bin=$1; out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
openb=$root/../shared/data/openb
mig=$root/../shared/data/migprofiler
mkdir -p "$out"
# Wall- and CPU-time fields differ run to run; everything else must not.
blank() { sed -E 's/"(wall_s|cpu_s)": [-0-9.e+]+/"\1": 0/; s/ [0-9]+\.[0-9]{3}$/ WALL/'; }
run() {
  local name=$1; shift
  echo "snapshot: $name" >&2
  "$bin" simulate "$@" | blank >"$out/$name.txt"
}
run thesis.json --experiment thesis --seeds 2 --json
run thesis.table --experiment thesis --seeds 2
run thesis-scale.json --experiment thesis-scale --seeds 2 --workloads 500 --cluster-nodes 8 --json
run packing.json --experiment packing --seeds 2 --cluster-nodes 16 --json
run openb-alloc.json --experiment openb-alloc --seeds 42-43 --trace "$openb/openb_pod_list_default.csv" --json
run openb-alloc.table --experiment openb-alloc --seeds 42-43 --trace "$openb/openb_pod_list_default.csv" --policy fgd,best-fit
run online-offline.json --experiment online-offline --seeds 2 --json
run overprovision.json --experiment overprovision --seeds 2 --json
run knots.json --experiment knots --seeds 2 --json
run knots.table --experiment knots --seeds 2
run disaggregation.json --experiment disaggregation --seeds 2 --json
run calibrate.table --experiment calibrate --data "$mig"
