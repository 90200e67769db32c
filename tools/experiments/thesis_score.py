#!/usr/bin/env python3
"""Scores a `tessera simulate --experiment thesis --json` run against the thesis's Ch. 9 table.

Reads the JSON on stdin (or a file argument) and prints the seventeen figures of the thesis
reproduction (docs/simulator.md, "The thesis table, reproduced") with their target ranges, then
slo-aware's checks when it ran. Pooling as in that section: attainment = pods that met their SLO
over all pods of the 20- and 40-pod runs of one SLO level; makespan and energy = each policy's
sum over the four thesis scenarios ÷ predictive's; |ach − SLO|/SLO = each policy's mean of its
four scenario means. Exit status 1 when any figure is outside its range.
"""
import json
import sys

THESIS = ["pods=20,slo=low", "pods=20,slo=high", "pods=40,slo=low", "pods=40,slo=high"]
INF = float("inf")
# (figure, policy, low bound, high bound): the reproduction's target ranges.
TARGETS = [
    ("attain_low", "predictive", 0.90, 1), ("attain_high", "predictive", 0.75, 1),
    ("attain_low", "min", 0.90, 1), ("attain_high", "min", 0.40, 0.80),
    ("attain_low", "round-robin", 0.45, 0.80), ("attain_high", "round-robin", 0, 0.25),
    ("attain_low", "max", 0.95, 1), ("attain_high", "max", 0.95, 1),
    ("makespan_ratio", "max", 1.3, 1.7), ("makespan_ratio", "min", 0.95, 1.25),
    ("makespan_ratio", "round-robin", 0.9, 1.2),
    ("energy_ratio", "max", 1.2, 1.6), ("energy_ratio", "min", 0.9, 1.1),
    ("energy_ratio", "round-robin", 0.8, 1.05),
    ("diff_ratio", "min", 2, INF), ("diff_ratio", "round-robin", 2, INF),
    ("diff_ratio", "max", 2, INF),
]
THESIS_VALUE = {("attain_low", "predictive"): 0.9615, ("attain_high", "predictive"): 53 / 60,
                ("attain_low", "min"): 1.0, ("attain_high", "min"): 36 / 60,
                ("attain_low", "round-robin"): 0.6205, ("attain_high", "round-robin"): 0.10,
                ("attain_low", "max"): 1.0, ("attain_high", "max"): 1.0,
                ("makespan_ratio", "max"): 1.5, ("makespan_ratio", "min"): 1.1,
                ("makespan_ratio", "round-robin"): 1.04, ("energy_ratio", "max"): 1.4,
                ("energy_ratio", "min"): 0.99, ("energy_ratio", "round-robin"): 0.91,
                ("diff_ratio", "min"): 2.92, ("diff_ratio", "round-robin"): 3.03,
                ("diff_ratio", "max"): 3.62}


def figures(doc):
    per = {}  # policy -> scenario -> result
    for r in doc["results"]:
        per.setdefault(r["policy"], {})[r["scenario"]] = r
    out = {}
    for policy, scen in per.items():
        if not all(s in scen for s in THESIS):
            continue
        f = {}
        for level in ("low", "high"):
            met = pods = 0
            for s in THESIS:
                if s.endswith(level):
                    for run in scen[s]["per_seed"]:
                        met += run["slo_attainment"] * run["pods"]
                        pods += run["pods"]
            f["attain_" + level] = met / pods
        f["makespan"] = sum(scen[s]["makespan_s"] for s in THESIS)
        f["energy"] = sum(scen[s]["energy_j"] for s in THESIS)
        f["diff"] = sum(scen[s]["qps_slo_abs_diff_mean"] for s in THESIS) / 4
        f["energy_by_scenario"] = {s: scen[s]["energy_j"] for s in THESIS}
        f["attain_by_scenario"] = {s: scen[s]["slo_attainment"] for s in scen}
        f["feasible_by_scenario"] = {s: scen[s].get("slo_attainment_feasible") for s in scen}
        out[policy] = f
    p = out.get("predictive")
    if p:
        for f in out.values():
            f["makespan_ratio"] = f["makespan"] / p["makespan"]
            f["energy_ratio"] = f["energy"] / p["energy"]
            f["diff_ratio"] = f["diff"] / p["diff"]
    return out


def main():
    doc = json.load(open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin)
    out = figures(doc)
    misses = 0
    print(f"{'figure':<16}{'policy':<13}{'ours':>8}{'thesis':>8}  range")
    for fig, policy, lo, hi in TARGETS:
        if policy not in out:
            continue
        v = out[policy][fig]
        ok = lo <= v <= hi
        misses += not ok
        rng = f"[{lo:g}, {hi:g}]" if hi != INF else f">= {lo:g}"
        print(f"{fig:<16}{policy:<13}{v:>8.3f}{THESIS_VALUE[(fig, policy)]:>8.3f}  {rng}"
              f"{'' if ok else '  MISS'}")
    print(f"misses: {misses} of {len(TARGETS)}")
    s = out.get("slo-aware")
    if s:
        print("\nslo-aware:")
        for sc, v in sorted(s["feasible_by_scenario"].items()):
            need = 0.98 if sc.split(",")[1] == "slo=low" else 0.95
            bad = v is not None and v < need
            misses += bad
            print(f"  feasible attainment {sc:<30}{v:>7.3f} (>= {need}){'  MISS' if bad else ''}")
        checks = [
            ("raw attainment low >= predictive's", s["attain_low"] >= out["predictive"]["attain_low"]),
            ("raw attainment high >= predictive's", s["attain_high"] >= out["predictive"]["attain_high"]),
            ("energy <= predictive's", s["energy"] <= out["predictive"]["energy"]),
        ]
        for b, need in (("min", 2.92), ("round-robin", 3.03), ("max", 3.62)):
            if b in out:
                checks.append((f"|diff| {b}/slo-aware = {out[b]['diff'] / s['diff']:.2f} >= {need}",
                               out[b]["diff"] / s["diff"] >= need))
        if "max" in out:
            checks.append((f"energy max/slo-aware = {out['max']['energy'] / s['energy']:.2f} >= 1.4",
                           out["max"]["energy"] / s["energy"] >= 1.4))
        for b in ("predictive", "min", "max", "round-robin"):
            if b in out:
                dom = (out[b]["attain_low"] + out[b]["attain_high"] > s["attain_low"] + s["attain_high"]
                       and out[b]["energy"] < s["energy"])
                checks.append((f"{b} does not keep more SLOs with less energy", not dom))
        for text, ok in checks:
            misses += not ok
            print(f"  {text}{'' if ok else '  MISS'}")
        print(f"  attainment low/high {s['attain_low']:.3f}/{s['attain_high']:.3f}, "
              f"|diff| {s['diff']:.3f} (predictive {out['predictive']['diff']:.3f})")
    sys.exit(1 if misses else 0)


if __name__ == "__main__":
    main()
