#!/usr/bin/env python3
"""Scores a `tessera simulate --experiment thesis --json` run against the thesis's Ch. 9 table.

Reads the JSON on stdin (or a file argument) and prints its `reproduction` (the seventeen
figures of docs/simulator.md, "The thesis table, reproduced", computed by the simulator with the
thesis's values and the target ranges), then slo-aware's checks when it ran, pooled the same way:
attainment = pods that met their SLO over all pods of the 20- and 40-pod runs of one SLO level;
energy = each policy's sum over the four thesis scenarios; |ach − SLO|/SLO = each policy's mean
of its four scenario means. Policy options in names ('min{"mps_slots":4}') are dropped.
Exit status 1 when any figure or check misses.
"""
import json
import sys

THESIS = ["pods=20,slo=low", "pods=20,slo=high", "pods=40,slo=low", "pods=40,slo=high"]
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
    return out


def main():
    doc = json.load(open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin)
    for r in doc["results"]:
        r["policy"] = r["policy"].split("{")[0]
    out = figures(doc)
    misses = 0
    print(f"{'figure':<16}{'policy':<13}{'ours':>8}{'thesis':>8}  range")
    for f in doc.get("reproduction", []):
        rng = f"[{f['lo']:g}, {f['hi']:g}]" if f["hi"] is not None else f">= {f['lo']:g}"
        misses += not f["held"]
        print(f"{f['figure']:<16}{f['policy']:<13}{f['ours']:>8.3f}{f['thesis']:>8.3f}  {rng}"
              f"{'' if f['held'] else '  MISS'}")
    print(f"misses: {misses} of {len(doc.get('reproduction', []))}")
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
