"""Ch. 6.3's fixed workload on one real GPU: x pods on x equal MPS partitions (#35, cause 3).

The thesis's Fig. 6.6 runs x copies of one engine, each on 1/x of a GPU, and finds their total
QPS "follow[s] an almost linear advance" (seed 000, l. 1087); its Ch. 6.4 interference was
measured in MLPerf's Offline scenario, "to send all the inference queries at the same time and
thus produce as much interference as possible" (l. 1091). The simulator reads the interference
of Ch. 9's SingleStream pods as a fraction of the Offline one (docs/simulator.md, co-runner
pressure). This measures both regimes on one GPU:

  for each application (model x batch) and each x of --pods:
    alone     one process at MPS 100/x %, the other x - 1 idle   -> its QPS alone on 1/x
    together  x processes at MPS 100/x %, released at once       -> each one's QPS beside x - 1

Batch 1, back to back, is the SingleStream-like load (one query, wait, the next); a large batch
back to back is the Offline-like one. Written into --out:
  measurements.jsonl  every process's windows, as measured
  scaling.csv         app,pods,mps,alone_qps,together_qps,kept,total_vs_whole,count
    kept            together QPS per process / its QPS alone on the same partition (the
                    simulator's ThesisTest.FourPodsOnFourQuartersOfAV100ServeAlmostLinearly)
    total_vs_whole  the x processes' total / one process alone at MPS 100 % (Fig. 6.6's curve)

Uses characterise.py's runner processes and MPS daemon (same rules: MIG mode, clocks and compute
mode are never changed; the daemon is always shut down). One pool of processes per application
(1 + 2 + 4 for the default pods), started together and stopped before the next application.

Usage: python3 tools/characterise/scaling.py --out DIR [--dry-run]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import characterise as ch
from runner import MODELS


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="directory for scaling.csv and measurements")
    p.add_argument("--models", default="resnet50,mobilenet_v2,bert-base",
                   help="comma-separated, of " + ", ".join(MODELS))
    p.add_argument("--batches", type=ch.positive_ints, default=[1, 32])
    p.add_argument("--pods", type=ch.positive_ints, default=[1, 2, 4],
                   help="how many processes share the GPU, each at MPS 100/x %%")
    p.add_argument("--windows", type=int, default=ch.MIN_WINDOWS)
    p.add_argument("--window-s", type=float, default=1.0)
    p.add_argument("--warmup-s", type=float, default=2.0)
    p.add_argument("--rewarm-s", type=float, default=0.3)
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="start no application past this many seconds (0: no limit)")
    p.add_argument("--runner", default=os.path.join(ch.HERE, "runner.py"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args(argv)
    ch.check_measuring_args(p, a)
    if any(x > 100 for x in a.pods):
        p.error(f"--pods {a.pods}: at most 100 (each gets MPS 100/x %, at least 1 %)")
    a.pool = True  # start_runner passes --rewarm-s to every process
    return a


def mps_of(pods):
    return 100 // pods


def plan(a):
    """[(app, [(run, pods)])]: per application, each x alone then together (x = 1: alone only)."""
    apps = [(m, b) for m in a.models for b in a.batches]
    return [(app, [r for x in a.pods for r in ([("alone", x)] if x == 1 else
                                                [("alone", x), ("together", x)])])
            for app in apps]


def measure_app(a, app, runs, env, record):
    """One pool for `app`: x processes at MPS 100/x % for each x; its runs in order."""
    procs = {}
    try:
        for x in a.pods:
            for i in range(x):
                procs[(x, i)] = ch.start_runner(a, app, env, mps_of(x))
        ch.await_ready(list(procs.values()), [app] * len(procs))
        for run, x in runs:
            used = [procs[(x, i)] for i in range(1 if run == "alone" else x)]
            results = ch.measure_together(used, [app] * len(used))
            record({"app": ch.app_key(*app), "run": run, "pods": x, "mps": mps_of(x),
                    "qps": [r["qps"] for r in results],
                    "device": results[0].get("device", "")})
    finally:
        ch.stop_runners(list(procs.values()), check=False)


def rows(measurements):
    """scaling.csv's rows: (app, pods, mps, alone_qps, together_qps, kept, total_vs_whole,
    count), where alone and together are means over windows (and processes)."""
    alone = {(m["app"], m["pods"]): statistics.fmean(m["qps"][0])
             for m in measurements if m["run"] == "alone"}
    out = []
    for m in measurements:
        key = (m["app"], m["pods"])
        if key not in alone:
            continue
        if m["run"] == "alone" and m["pods"] != 1:
            continue  # its row is the together run's
        per_process = [statistics.fmean(q) for q in m["qps"]]
        together = statistics.fmean(per_process)
        whole = alone.get((m["app"], 1))
        out.append((m["app"], m["pods"], m["mps"], alone[key], together,
                    together / alone[key],
                    sum(per_process) / whole if whole else float("nan"),
                    sum(len(q) for q in m["qps"])))
    return out


def write_outputs(out, measurements):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "measurements.jsonl"), "w", encoding="utf-8") as f:
        for m in measurements:
            f.write(json.dumps(m) + "\n")
    ch.write_csv(os.path.join(out, "scaling.csv"),
                 "app,pods,mps,alone_qps,together_qps,kept,total_vs_whole,count",
                 rows(measurements))


def main(argv=None):
    a = parse_args(argv)
    work = plan(a)
    if a.dry_run:
        for app, runs in work:
            print(ch.app_key(*app), ", ".join(f"{r} x{x} at MPS {mps_of(x)}%" for r, x in runs))
        runs = sum(len(r) for _, r in work)
        est = len(work) * (ch.PROCESS_START_S + a.warmup_s) + runs * (
            a.rewarm_s + a.windows * a.window_s)
        print(f"{len(work)} applications, {runs} runs, about {est / 60:.0f} min")
        return 0
    t0 = time.monotonic()
    measurements = []
    with tempfile.TemporaryDirectory(prefix="tessera-characterise-") as tmp:
        with ch.mps_daemon(tmp) as env:
            for app, runs in work:
                if a.budget_s and time.monotonic() - t0 > a.budget_s:
                    print(f"scaling: past the budget, not run: {ch.app_key(*app)}",
                          file=sys.stderr)
                    continue
                try:
                    measure_app(a, app, runs, env, measurements.append)
                except (RuntimeError, OSError, ValueError) as e:  # the others go on
                    print(f"scaling: {ch.app_key(*app)}: {e}", file=sys.stderr)
                write_outputs(a.out, measurements)  # a cut keeps what was measured
    write_outputs(a.out, measurements)
    for r in rows(measurements):
        print(f"{r[0]:<22} x{r[1]} at {r[2]:>3}%: alone {r[3]:8.1f}, beside {r[1] - 1}: "
              f"{r[4]:8.1f} (kept {r[5]:.3f}), total / one on the whole GPU {r[6]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
