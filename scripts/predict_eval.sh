#!/usr/bin/env bash
# Reproduces the evaluation table of docs/prediction.md: every completion method on the
# MIGProfiler data, random hiding at 25/50/75% over seeds 1..10, and the leave-one-row-out cold
# start with K = 1 and 2 kept cells (`features` reads what the MIGProfiler tables declare).
# Prints medians over the seeds of each metric, then the error
# by sparsity at 50% missing (hidden cells grouped by how many cells their row kept).
# Usage: scripts/predict_eval.sh [path/to/tessera] [data dir] [first seed, default 1]
# The published table uses seeds 1..10; seeds 101..110 are the robustness check.
set -euo pipefail
cd "$(dirname "$0")/.."
tessera=${1:-build/tessera}
data=${2:-../shared/data/migprofiler}
first=${3:-1}
seeds=$(seq "$first" $((first + 9)))
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for method in baseline svd imputer knn hybrid features; do
  for missing in 0.25 0.5 0.75; do
    for seed in $seeds; do
      "$tessera" predict evaluate --data "$data" --method "$method" --missing "$missing" \
        --seed "$seed" --json >>"$out"
    done
  done
  for keep in 1 2; do
    for seed in $seeds; do
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
print("| method | protocol | missing / keep | n (median) | MAPE % | median APE % | p90 APE % "
      "| RMSE log | 90% interval coverage % |")
print("|---|---|---|---|---|---|---|---|---|")
for (method, protocol, param), rs in groups.items():
    med = lambda f: statistics.median(r[f] for r in rs)
    print(f"| {method} | {protocol} | {param} | {med('n'):.0f} | {med('mape'):.1f} | "
          f"{med('median_ape'):.1f} | {med('p90_ape'):.1f} | {med('rmse_log'):.3f} | "
          f"{100 * med('coverage90'):.1f} |")
print()
print("50% missing, by cells the row kept: median APE % (hidden cells, summed over the seeds)")
print("| method | kept 1 | kept 2 | kept 3 |")
print("|---|---|---|---|")
for (method, protocol, param), rs in groups.items():
    if protocol != "random" or param != 0.5:
        continue
    cells = []
    for known in (1, 2, 3):
        bs = [b for r in rs for b in r["by_known"] if b["known"] == known]
        med = statistics.median(b["median_ape"] for b in bs) if bs else float("nan")
        cells.append(f"{med:.1f} ({sum(b['n'] for b in bs)})")
    print(f"| {method} | " + " | ".join(cells) + " |")
PY
