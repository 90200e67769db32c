"""The characterisation campaign of seed 000 Ch. 6 on one real GPU (issue #20).

For each application (model x batch size) it measures, with runner.py:
  - alone on the whole GPU, without MPS                  -> profile  <gpu>/whole/100
  - alone under MPS, each --mps thread limit (100/50/25) -> profile  <gpu>/whole/<p> (p < 100;
    MPS at 100 % goes to measurements.jsonl only, as MPS's own overhead)
  - the pairs of --pairs, together under 50/50 MPS       -> interference "mps"
  - the same pairs together without MPS (time-slicing)   -> interference "timeslice"
and writes, into --out, the predictor's long CSVs (docs/prediction.md):
  profile.csv       row,column,value,count,variance  (samples/s; one count per timed window)
  interference.csv  kind,victim,aggressor,value,count,variance  (fraction of QPS lost)
  measurements.jsonl  every process's windows, as measured
An interference value is 1 - (victim's QPS beside the aggressor) / (its QPS alone in the same
setting: alone at 50 % MPS for "mps", alone on the whole GPU for "timeslice"), clamped to [0, 1],
as the simulator's profiler defines it (src/sim/profiler.cc); its variance is the windows'
variance of that fraction with the alone QPS held at its mean.

Rules on the GPU machine: MIG mode, clocks and compute mode are never changed. The MPS control
daemon is started with its pipe and log directories in a temporary folder and always shut
down (`echo quit | nvidia-cuda-mps-control`) before the campaign returns, also on failure.

Usage: python3 tools/characterise/characterise.py --gpu-model H100-80GB --out DIR [--dry-run]
"""

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from runner import BERT_SEQ, MODELS  # runner imports torch only when it runs

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_WINDOWS = 5  # each point is the mean of at least 5 timed windows (the issue)
PROCESS_START_S = 15  # budgeted per runner process: import torch, build, copy to the GPU


def app_key(model, batch):
    """The predictor's application key (docs/prediction.md): resnet50/bs8, bert-base/bs8/seq128."""
    return f"{model}/bs{batch}" + (f"/seq{BERT_SEQ}" if model == "bert-base" else "")


def config_key(gpu_model, mps_percent):
    """The predictor's configuration key for a whole GPU (predict/config_key.h)."""
    return f"{gpu_model}/whole/{mps_percent}"


def positive_ints(text):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of integers")
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"'{text}': every value must be a positive integer")
    return values


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu-model", required=True,
                   help="the catalog's model name of the GPU measured, e.g. H100-80GB")
    p.add_argument("--out", required=True, help="directory for the CSVs and measurements")
    p.add_argument("--models", default=",".join(MODELS),
                   help="comma-separated, of " + ", ".join(MODELS))
    p.add_argument("--batches", type=positive_ints, default=[1, 8, 32])
    p.add_argument("--mps", type=positive_ints, default=[100, 50, 25],
                   help="MPS active-thread percentages measured alone")
    p.add_argument("--pairs", choices=("same-batch", "all", "none"), default="same-batch",
                   help="co-located pairs: the models at the same batch size (default), every "
                        "pair of applications, or none")
    p.add_argument("--windows", type=int, default=MIN_WINDOWS)
    p.add_argument("--window-s", type=float, default=2.0)
    p.add_argument("--warmup-s", type=float, default=3.0)
    p.add_argument("--runner", default=os.path.join(HERE, "runner.py"),
                   help="the measuring process (tests give a stand-in)")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--pool", action="store_true",
                   help="start each measured process once and reuse it for its alone run and "
                        "its pairs (saves the per-run start; see campaign_pooled)")
    p.add_argument("--rewarm-s", type=float, default=0.5,
                   help="with --pool: untimed batches before each measurement")
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="with --pool: start no run past this many seconds (0: no limit); the "
                        "runs left out are listed, the CSVs are written from what was measured")
    p.add_argument("--csv-from", metavar="JSONL",
                   help="write the CSVs into --out from a measurements.jsonl; measure nothing")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and its estimated duration; start nothing")
    a = p.parse_args(argv)
    check_measuring_args(p, a)
    if any(v > 100 for v in a.mps):
        p.error(f"--mps {a.mps}: percentages are at most 100")
    return a


def check_measuring_args(p, a):
    """The checks every measuring tool here shares (this file's and scaling.py's flags):
    --models split and known, at least MIN_WINDOWS windows, positive and non-negative times."""
    a.models = [m for m in a.models.split(",") if m]
    unknown = [m for m in a.models if m not in MODELS]
    if unknown or not a.models:
        p.error(f"--models: unknown {', '.join(unknown) or '(none given)'}; known: "
                + ", ".join(MODELS))
    if a.windows < MIN_WINDOWS:
        p.error(f"--windows {a.windows}: each point is the mean of at least {MIN_WINDOWS} "
                "timed windows")
    if not (a.window_s > 0 and a.warmup_s >= 0 and a.rewarm_s >= 0 and a.budget_s >= 0):
        p.error("--window-s must be positive and --warmup-s, --rewarm-s, --budget-s not negative")


def plan(a):
    """The runs, in order: (label, mps percent or None, [(model, batch), ...])."""
    apps = [(m, b) for b in a.batches for m in a.models]
    runs = [("alone", None, [app]) for app in apps]
    runs += [("alone", p, [app]) for p in a.mps for app in apps]
    if a.pairs == "all":
        pairs = list(itertools.combinations_with_replacement(apps, 2))
    elif a.pairs == "same-batch":
        pairs = [(x, y) for x, y in itertools.combinations_with_replacement(apps, 2)
                 if x[1] == y[1]]
    else:
        pairs = []
    runs += [("pair", 50, list(pair)) for pair in pairs]
    runs += [("pair", None, list(pair)) for pair in pairs]
    return runs


def estimated_s(a, runs):
    if a.pool:
        phases = 3  # one pool start per phase (campaign_pooled)
        return phases * (PROCESS_START_S + a.warmup_s) + len(runs) * (
            a.rewarm_s + a.windows * a.window_s)
    per_run = PROCESS_START_S + a.warmup_s + a.windows * a.window_s
    return len(runs) * per_run


@contextlib.contextmanager
def mps_daemon(tmp):
    """An MPS control daemon with its pipe and log directories under `tmp`, shut down on exit
    (also when the body raised). Yields the environment its clients need."""
    env = dict(os.environ,
               CUDA_MPS_PIPE_DIRECTORY=os.path.join(tmp, "mps-pipe"),
               CUDA_MPS_LOG_DIRECTORY=os.path.join(tmp, "mps-log"))
    os.makedirs(env["CUDA_MPS_PIPE_DIRECTORY"], exist_ok=True)
    os.makedirs(env["CUDA_MPS_LOG_DIRECTORY"], exist_ok=True)
    subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True)
    try:
        yield env
    finally:
        subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True, env=env,
                       check=False)


def start_runner(a, app, env, mps_percent):
    """One runner process for `app`, with its MPS limit in its environment."""
    model, batch = app
    penv = dict(env)
    if mps_percent is not None:
        penv["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(mps_percent)
    return subprocess.Popen(
        [a.python, a.runner, "--model", model, "--batch", str(batch),
         "--windows", str(a.windows), "--window-s", str(a.window_s),
         "--warmup-s", str(a.warmup_s), "--rewarm-s", str(a.rewarm_s if a.pool else 0)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=penv)


def await_ready(procs, apps):
    for p, app in zip(procs, apps):
        line = p.stdout.readline()
        if json.loads(line or "{}").get("ready") is not True:
            raise RuntimeError(f"runner for {app_key(*app)} did not get ready: {line!r}")


def measure_together(procs, apps):
    """Sends `go` to every process (a pair starts together), then reads their windows."""
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = []
    for p, app in zip(procs, apps):
        line = p.stdout.readline()
        try:
            r = json.loads(line)
            qps = [float(v) for v in r["qps"]]
        except (ValueError, KeyError, TypeError):
            raise RuntimeError(f"runner for {app_key(*app)} printed no result: {line!r}")
        if len(qps) < MIN_WINDOWS or any(v <= 0 for v in qps):
            raise RuntimeError(f"runner for {app_key(*app)}: bad windows {qps}")
        results.append(r)
    return results


def stop_runners(procs, check):
    """Closes each runner's stdin (it exits), waits; kills what is still running. With `check`,
    a non-zero exit is an error."""
    try:
        for p in procs:
            if p.poll() is None:
                p.stdin.close()
        for p in procs:
            if p.wait(timeout=60) != 0 and check:
                raise RuntimeError(f"runner exited with {p.returncode}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            if not p.stdin.closed:
                p.stdin.close()
            p.stdout.close()


def run_together(a, apps, env, mps_percent):
    """Starts one runner per application, releases them together once all are warm, and returns
    their results (one dict each, in order)."""
    procs = []
    ok = False
    try:
        for app in apps:
            procs.append(start_runner(a, app, env, mps_percent))
        await_ready(procs, apps)
        results = measure_together(procs, apps)
        ok = True
    finally:
        stop_runners(procs, check=ok)
    return results


def mean_var(values):
    """Mean and sample variance (the predictor's Welford variance), count."""
    return statistics.fmean(values), float(statistics.variance(values)), len(values)


def profile_rows(gpu_model, measurements):
    """(row, column, value, count, variance) of the alone runs, MPS 100 left out."""
    rows = []
    for m in measurements:
        if m["run"] != "alone" or m["mps"] == 100:
            continue
        mean, var, n = mean_var(m["qps"])
        rows.append((m["app"], config_key(gpu_model, m["mps"] or 100), mean, n, var))
    return rows


def interference_rows(measurements):
    """(kind, victim, aggressor, value, count, variance) of the pair runs."""
    alone = {(m["app"], m["mps"]): statistics.fmean(m["qps"])
             for m in measurements if m["run"] == "alone"}
    # A pair of one application with itself gives two victims of the same cell: their windows
    # are pooled into one row (the predictor refuses a duplicate cell).
    lost = {}
    for m in measurements:
        if m["run"] != "pair":
            continue
        base = alone.get((m["app"], m["mps"]))
        if not base:
            continue  # its alone run is missing: nothing to compare with
        kind = "mps" if m["mps"] is not None else "timeslice"
        lost.setdefault((kind, m["app"], m["aggressor"]), []).extend(
            min(1.0, max(0.0, 1 - q / base)) for q in m["qps"])
    rows = []
    for (kind, victim, aggressor), values in lost.items():
        mean, var, n = mean_var(values)
        rows.append((kind, victim, aggressor, mean, n, var))
    return rows


def write_csv(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write(header + "\n")
        for r in rows:
            f.write(",".join(v if isinstance(v, str) else (str(v) if isinstance(v, int)
                                                           else repr(float(v)))
                             for v in r) + "\n")


def write_outputs(out, gpu_model, measurements):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "measurements.jsonl"), "w", encoding="utf-8") as f:
        for m in measurements:
            f.write(json.dumps(m) + "\n")
    write_csv(os.path.join(out, "profile.csv"), "row,column,value,count,variance",
              profile_rows(gpu_model, measurements))
    write_csv(os.path.join(out, "interference.csv"), "kind,victim,aggressor,value,count,variance",
              interference_rows(measurements))


def campaign(a, runs, record=None):
    """Every run of `runs`; with a.pool through campaign_pooled. `record(measurement)`, when
    given, sees each measurement as soon as it is made (the device run appends it to a file, so
    a campaign cut short keeps what it measured)."""
    if a.pool:
        return campaign_pooled(a, runs, record)
    measurements = []
    with tempfile.TemporaryDirectory(prefix="tessera-characterise-") as tmp:
        def done(run, mps, apps, results):
            for m in as_measurements(run, mps, apps, results):
                measurements.append(m)
                if record:
                    record(m)

        for run, mps, apps in runs:  # without MPS first
            if mps is None:
                done(run, mps, apps, run_together(a, apps, dict(os.environ), None))
        with mps_daemon(tmp) as env:
            for run, mps, apps in runs:
                if mps is not None:
                    done(run, mps, apps, run_together(a, apps, env, mps))
    return measurements


def as_measurements(run, mps, apps, results):
    out = []
    for i, (app, r) in enumerate(zip(apps, results)):
        other = apps[1 - i] if len(apps) == 2 else None
        out.append({"run": run, "mps": mps, "app": app_key(*app),
                    "aggressor": app_key(*other) if other else None,
                    "qps": r["qps"], "device": r.get("device", "")})
    return out


def pooled_phases(runs):
    """The runs of a pooled campaign in three phases, each with one pool of processes: alone on
    the whole GPU without MPS; everything under MPS (alone at 50 %, the 50/50 pairs, alone at
    the other limits); the time-sliced pairs without MPS. A budget cuts from the end, so the
    time-sliced pairs go first, as the campaign's priorities say (MPS pairs are what the
    contention model is checked on)."""
    whole = [r for r in runs if r[1] is None and r[0] == "alone"]
    mps = sorted((r for r in runs if r[1] is not None),
                 key=lambda r: (r[1] != 50, r[0] != "alone", -r[1]))
    timeslice = [r for r in runs if r[1] is None and r[0] == "pair"]
    return [(False, whole), (True, mps), (False, timeslice)]


def campaign_pooled(a, runs, record=None):
    """The campaign with one process per (application, MPS limit) kept for the whole phase, and
    a second one where an application is paired with itself: a run costs its windows only, not
    a process start. Idle processes issue no work, so an alone run is alone on the GPU's
    engines; they hold GPU memory only. A process that does not get ready, or a run that fails,
    is logged and its runs left out; the others go on. Past a.budget_s no run is started."""
    t0 = time.monotonic()
    measurements = []
    skipped = []
    with tempfile.TemporaryDirectory(prefix="tessera-characterise-") as tmp:
        for uses_mps, phase in pooled_phases(runs):
            if not phase:
                continue
            if a.budget_s and time.monotonic() - t0 > a.budget_s:
                skipped += phase
                continue
            try:
                run_pool(a, phase, tmp, uses_mps, t0, skipped,
                         lambda m: (measurements.append(m), record and record(m)))
            except (OSError, subprocess.CalledProcessError) as e:
                # A pool that cannot start (no MPS on this machine) loses its phase only.
                print(f"characterise: phase {'MPS' if uses_mps else 'no MPS'} failed: {e}",
                      file=sys.stderr)
    for run, mps, apps in skipped:
        print(f"characterise: past the budget, not run: {run}",
              "no MPS" if mps is None else f"MPS {mps}%",
              " + ".join(app_key(*x) for x in apps), file=sys.stderr)
    return measurements


def pool_keys(mps, apps):
    """The pool's processes a run uses: (application, MPS limit, instance); the second of a
    self-pair is instance 1."""
    return [(app, mps, 1 if i == 1 and apps[0] == app else 0) for i, app in enumerate(apps)]


def run_pool(a, phase, tmp, uses_mps, t0, skipped, record):
    """One phase of campaign_pooled: its processes started together, then its runs in order."""
    ctx = mps_daemon(tmp) if uses_mps else contextlib.nullcontext(dict(os.environ))
    with ctx as env:
        keys = list(dict.fromkeys(k for _, mps, apps in phase for k in pool_keys(mps, apps)))
        procs = {}
        try:
            for k in keys:
                procs[k] = start_runner(a, k[0], env, k[1])
            ready = set()
            for k in keys:
                try:
                    await_ready([procs[k]], [k[0]])
                    ready.add(k)
                except (RuntimeError, ValueError) as e:
                    print(f"characterise: {e}", file=sys.stderr)
            for n, (run, mps, apps) in enumerate(phase):
                if a.budget_s and time.monotonic() - t0 > a.budget_s:
                    skipped += phase[n:]
                    break
                ks = pool_keys(mps, apps)
                if not all(k in ready for k in ks):
                    continue  # a process of this run never got ready (logged above)
                try:
                    results = measure_together([procs[k] for k in ks], apps)
                except (RuntimeError, OSError) as e:  # that process is gone: the others go on
                    print(f"characterise: {run} {mps}: {e}", file=sys.stderr)
                    ready.difference_update(ks)
                    continue
                for m in as_measurements(run, mps, apps, results):
                    record(m)
        finally:
            stop_runners(list(procs.values()), check=False)


def main(argv=None):
    a = parse_args(argv)
    runs = plan(a)
    if a.dry_run:
        for run, mps, apps in runs:
            print(run, "no MPS" if mps is None else f"MPS {mps}%",
                  " + ".join(app_key(*x) for x in apps))
        print(f"{len(runs)} runs, about {estimated_s(a, runs) / 60:.0f} min")
        return 0
    if a.csv_from:
        with open(a.csv_from, encoding="utf-8") as f:
            measurements = [json.loads(line) for line in f if line.strip()]
        write_outputs(a.out, a.gpu_model, measurements)
        print(f"{len(measurements)} measurements; {a.out}/profile.csv, {a.out}/interference.csv")
        return 0
    # Each measurement is appended to a partial file as it is made: a campaign cut short (a
    # lease's end) keeps what it measured, and --csv-from turns it into the CSVs.
    os.makedirs(a.out, exist_ok=True)
    partial = os.path.join(a.out, "measurements.partial.jsonl")
    with open(partial, "w", encoding="utf-8") as log:
        def record(m):
            log.write(json.dumps(m) + "\n")
            log.flush()
        measurements = campaign(a, runs, record)
    write_outputs(a.out, a.gpu_model, measurements)
    os.remove(partial)
    print(f"{len(measurements)} measurements; {a.out}/profile.csv, {a.out}/interference.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
