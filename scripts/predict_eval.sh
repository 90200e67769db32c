#!/usr/bin/env bash
# Reproduces the evaluation table of docs/prediction.md: every completion method on the
# MIGProfiler data, random hiding at 25/50/75% over seeds 1..10, and the leave-one-row-out cold
# start with K = 1 and 2 kept cells. Prints medians over the seeds of each metric.
# Usage: scripts/predict_eval.sh [path/to/tessera] [data dir]
set -euo pipefail
cd "$(dirname "$0")/.."
tessera=${1:-build/tessera}
data=${2:-../shared/data/migprofiler}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for method in baseline svd imputer knn hybrid; do
  for missing in 0.25 0.5 0.75; do
    for seed in $(seq 1 10); do
      "$tessera" predict evaluate --data "$data" --method "$method" --missing "$missing" \
        --seed "$seed" --json >>"$out"
    done
  done
  for keep in 1 2; do
    for seed in $(seq 1 10); do
      "$tessera" predict evaluate --data "$data" --method "$method" \
        --protocol leave-one-row-out --keep "$keep" --seed "$seed" --json >>"$out"
    done
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
groups = {}
for r in rows:
    key = (r["method"], r["protocol"], r["missing"] if r["protocol"] == "random" else r["keep"])
    groups.setdefault(key, []).append(r)
print("| method | protocol | missing / keep | n (median) | MAPE % | median APE % | RMSE log |")
print("|---|---|---|---|---|---|---|")
for (method, protocol, param), rs in groups.items():
    med = lambda f: statistics.median(r[f] for r in rs)
    print(f"| {method} | {protocol} | {param} | {med('n'):.0f} | {med('mape'):.1f} | "
          f"{med('median_ape'):.1f} | {med('rmse_log'):.3f} |")
PY
