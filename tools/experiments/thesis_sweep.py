#!/usr/bin/env python3
"""One reading of the thesis world changed at a time: the seventeen Ch. 9 figures for each.

    tools/experiments/thesis_sweep.py build/tessera [--seeds 1-10] [--grid] [READING ...]

Runs `tessera simulate --seeds S --reading R --json` for the defaults and each READING (the
`--reading` syntax: interference=0.15, subquarter=linear,interference=0.15, ...; a built-in list
when none is given) and prints one markdown row each: the figures held, the attainment rows
(low / high, pooled) of predictive, min, round robin and max, and every other figure out of
range. `*` marks a figure out of range. docs/simulator.md, "One reading at a time", is its
output.

--grid runs every combination of the readings that can be chosen together (GRID below: 72),
most figures held first, and then, per figure, in how many of them it missed
(docs/simulator.md, "Readings together").
"""
import argparse
import collections
import itertools
import json
import subprocess
import sys

DEFAULT_READINGS = [
    "interference=0", "interference=0.03", "interference=0.1", "interference=0.15",
    "interference=offline", "subquarter=floor", "subquarter=linear",
    "subquarter=linear,interference=0.15",
    "queries=1", "queries=0.5", "slo=literal", "base=mean", "quarters=roofline",
    "resnet_quarter=0.7", "resnet_quarter=0.75", "resnet_quarter=0.8", "resnet_quarter=0.85",
    "resnet_quarter=0.9", "resnet_quarter=0.95",
]
# The readings the seed leaves open, each within what its chapter allows (docs/simulator.md).
GRID = [
    ("interference", ["0.03", "0.05", "0.1"]),
    ("resnet_quarter", [None, "0.7", "0.75", "0.8"]),
    ("queries", ["0.5", "0.7", "1"]),
    ("subquarter", ["fail", "floor"]),
]
SHORT = {"attainment low": "low", "attainment high": "high", "makespan": "m", "energy": "e",
         "|diff|": "d"}
POLICIES = ["predictive", "min", "round-robin", "max"]


def run(binary, seeds, reading):
    # The seventeen figures read only the four Ch. 9 policies.
    cmd = [binary, "simulate", "--seeds", seeds, "--json", "--policy", ",".join(POLICIES)]
    if reading:
        cmd += ["--reading", reading]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["reproduction"]


def row(reading, figures):
    held = sum(f["held"] for f in figures)
    by = {(f["figure"], f["policy"]): f for f in figures}

    def cell(figure, policy):
        f = by[(figure, policy)]
        return f"{f['ours']:.2f}" + ("" if f["held"] else "\\*")

    cells = []
    for p in POLICIES:
        text = f"{cell('attainment low', p)} / {cell('attainment high', p)}"
        others = [f"{SHORT[f['figure']]} {f['ours']:.2f}\\*" for f in figures
                  if f["policy"] == p and not f["held"] and not f["figure"].startswith("attain")]
        cells.append(", ".join([text] + others))
    return f"| {reading or 'none (defaults)'} | {held} | " + " | ".join(cells) + " |"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--grid", action="store_true", help="every combination of GRID's readings")
    ap.add_argument("readings", nargs="*")
    args = ap.parse_intermixed_args()
    if args.grid:
        grid(args.binary, args.seeds)
        return
    readings = [""] + (args.readings or DEFAULT_READINGS)
    print("| reading changed | figures held | predictive | min | round robin | max |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in readings:
        print(row(r, figures_of(args.binary, args.seeds, r)), flush=True)


def figures_of(binary, seeds, reading):
    try:
        return run(binary, seeds, reading)
    except subprocess.CalledProcessError as e:
        sys.exit(f"thesis_sweep: --reading {reading!r} failed: {e.stderr.strip()}")


def grid(binary, seeds):
    rows, missed = [], collections.Counter()
    for values in itertools.product(*(v for _, v in GRID)):
        r = ",".join(f"{k}={v}" for (k, _), v in zip(GRID, values) if v is not None)
        figures = figures_of(binary, seeds, r)
        rows.append((sum(f["held"] for f in figures), r, figures))
        missed.update(f"{f['figure']}, {f['policy']}" for f in figures if not f["held"])
    print("| readings | figures held | predictive | min | round robin | max |")
    print("| --- | --- | --- | --- | --- | --- |")
    for _, r, figures in sorted(rows, key=lambda x: -x[0]):
        print(row(r, figures))
    print()
    print(f"| figure | missed in (of {len(rows)}) |")
    print("| --- | --- |")
    for name, n in missed.most_common():
        print(f"| {name} | {n} |")


if __name__ == "__main__":
    main()
