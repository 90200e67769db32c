"""Every registered policy on every experiment's protocol.

`tessera simulate --list-policies` names the policies and `tessera simulate --help` the
experiments; each pair runs on a tiny scenario of that experiment (one seed, a few nodes, a
cut of the openb trace). What is asserted of each run:
  - it either runs cleanly (exit 0), or is refused up front: exit 2 with one line on stderr
    that names the policy or the flag and says why;
  - never a signal: in the sanitizer build (the test command's) the scheduler checks the
    cluster's invariants after every cycle that changes it and aborts on a broken one
    (TESSERA_CHECK_INVARIANTS), and ASan/UBSan abort on memory and undefined behaviour;
  - never exit 1 (a run that broke on valid input).
Run by the test command with TESSERA_BIN set; prints "N passed, M failed" and exits 1 on any
failure.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

from cli_cases import BIN, ROOT, cut_openb, run_cases
BOUND_S = 600  # only against a runaway


def policies():
    out = subprocess.run([BIN, "simulate", "--list-policies"], capture_output=True,
                         text=True, check=True).stdout
    return [m.group(1) for m in re.finditer(r"^([\w-]+): ", out, re.M)]


def experiments():
    out = subprocess.run([BIN, "simulate", "--help"], capture_output=True, text=True).stdout
    m = re.search(r"--experiment TEXT:\{([^}]*)\}", out)
    return m.group(1).split(",")


def tiny(experiment, tmp):
    """The experiment's smallest run: one seed and a small cluster where it takes one."""
    if experiment in ("openb-alloc", "openb-defrag", "openb-bound"):
        return ["--trace", os.path.join(tmp, "pods.csv"), "--nodes",
                os.path.join(tmp, "nodes.csv"), "--seed", "42"]
    if experiment == "thesis-scale":
        return ["--workloads", "60", "--cluster-nodes", "2", "--seeds", "1"]
    if experiment in ("packing", "disaggregation"):
        return ["--cluster-nodes", "2", "--seeds", "1"]
    if experiment == "calibrate":
        return ["--data", os.path.join(ROOT, "..", "shared", "data", "migprofiler")]
    if experiment == "knots":
        # The heavily loaded batch-heavy mix (the default) has 3x the pods; 90 is enough here.
        return ["--seeds", "1", "--reading", "load=even"]
    return ["--seeds", "1"]


def run(experiment, policy, tmp):
    args = [BIN, "simulate", "--experiment", experiment, "--policy", policy] + tiny(
        experiment, tmp)
    try:
        done = subprocess.run(args, capture_output=True, text=True, errors="replace",
                              timeout=BOUND_S, cwd=tmp)
    except subprocess.TimeoutExpired:
        return f"still running after {BOUND_S} s"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if done.returncode == 0:
        return None
    if done.returncode < 0:
        return f"killed by signal {-done.returncode}: {' | '.join(lines[-3:])}"
    if done.returncode != 2:
        return f"exit {done.returncode}: {' | '.join(lines[-3:])}"
    if len(lines) != 1 or not (policy in lines[0] or "--policy" in lines[0]):
        return f"refused without one line naming the policy: {lines[:3]!r}"
    return None


def main():
    tmp = tempfile.mkdtemp(prefix="tessera-matrix-")
    try:
        cut_openb(tmp, pods=400, nodes=30)
        pols, exps = policies(), experiments()
        print(f"{len(pols)} policies x {len(exps)} experiments")
        return run_cases([(e, p) for e in exps for p in pols], lambda c: run(c[0], c[1], tmp),
                         2, lambda c: f"{c[0]} x {c[1]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
