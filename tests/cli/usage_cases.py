"""Command lines a new user would try, each with the exit code and the line it must print.
Each guards against one way a run can mislead: a silent run, exit 1 where the README promises
2, a table of nan, a message that does not say what to do.

Run by the test command with TESSERA_BIN set; prints "N passed, M failed".
"""

import os
import shutil
import subprocess
import sys
import tempfile

from cli_cases import BIN, OPENB


def cases(tmp):
    two_gpus = os.path.join(tmp, "two-gpus.csv")
    with open(two_gpus, "w") as f:
        f.write("sn,cpu_milli,memory_mib,gpu,model\nn1,96000,786432,2,V100M16\n")
    trace = os.path.join(OPENB, "openb_pod_list_default.csv")
    huge = "1000000"
    return [
        # Flags the experiment does not read are refused, naming what it reads.
        (["simulate", "--experiment", "thesis", "--cluster-nodes", "3"], 2,
         "--cluster-nodes does not apply to --experiment thesis (it reads: --apps, --out, --reading)"),
        (["simulate", "--experiment", "thesis", "--unprofiled", "3"], 2,
         "--unprofiled does not apply to --experiment thesis (it reads: --apps, --out, --reading)"),
        (["simulate", "--experiment", "thesis-scale", "--unprofiled", "7"], 2,
         "--unprofiled: Value 7 not in range"),
        (["simulate", "--experiment", "knots", "--trace", "x"], 2,
         "--trace does not apply to --experiment knots"),
        (["simulate", "--experiment", "calibrate", "--seeds", "3"], 2,
         "--seeds does not apply to --experiment calibrate"),
        # A bad option value or a policy the experiment cannot run is a usage error.
        (["simulate", "--policy", 'predictive{"slo_headroom":5}'], 2,
         "option 'slo_headroom': 5 is outside 0..1"),
        (["simulate", "--experiment", "packing", "--policy", "predictive"], 2,
         "--policy predictive: needs a predictor, and --experiment packing builds none"),
        (["schedule", "--policy", "max", "--features", "features.csv"], 2,
         "--features needs --profile (features complete the profile's rows)"),
        (["schedule", "--policy", "predictive"], 2,
         "--policy predictive needs a predictor: give --profile FILE"),
        # A policy that reads series in a cluster needs Prometheus; one that places batches is
        # not an extender's.
        (["schedule", "--policy", "resource-aware"], 2,
         "--policy resource-aware reads tessera_pod_fb_used_mib from Prometheus: give --prometheus URL"),
        (["extender", "--policy", "drmaestro"], 2,
         "policy drmaestro decides placements in batches, and kube-scheduler asks an extender about one pod at a time: run it as the scheduler (tessera schedule)"),
        # The verbs' prefix is a path kube-scheduler can send (the routes are regular
        # expressions: a 128 KiB prefix overflowed the regex's stack once served).
        (["extender", "--url-prefix", "tessera"], 2,
         "--url-prefix: must start with '/' (a path such as /tessera)"),
        (["extender", "--url-prefix", "/" + "x" * 2000], 2,
         "--url-prefix: is 2001 characters long; a path prefix is at most 1024"),
        # The same policy twice is refused: it would print two identical rows.
        (["simulate", "--experiment", "packing", "--policy", "max,max"], 2,
         "--policy max is given twice"),
        # Sizes past what the machine holds are refused before allocating.
        (["simulate", "--experiment", "packing", "--cluster-nodes", "100000"], 2,
         "--cluster-nodes: Value 100000 not in range"),
        (["simulate", "--experiment", "thesis-scale", "--workloads", "10000000"], 2,
         "--workloads: Value 10000000 not in range"),
        # Messages that say what to do.
        (["simulate", "--apps", tmp], 1, "is a directory; expected an application catalogue"),
        (["predict", "sweep", "--data", os.path.join(tmp, "no-shared")], 1,
         "does not exist (the MIGProfiler data is in ../shared/data/migprofiler"),
        (["simulate", "--experiment", "openb-alloc", "--trace", tmp], 1,
         f"--trace {tmp}: is not a file"),
        (["simulate", "--experiment", "openb-alloc", "--trace", trace, "--nodes",
          os.path.join(tmp, "none.csv")], 1, "does not exist"),
        # A node list too small for the curve says so instead of printing nan.
        (["simulate", "--experiment", "openb-alloc", "--trace", trace, "--nodes", two_gpus,
          "--policy", "fgd"], 0, "-: no arrival brought the arrived load to that level"),
        # The experiments, from their registry, with what each reads.
        (["simulate", "--list-experiments"], 0,
         "knots            batch jobs and inference pods on 10 GPU nodes (seed 004) (default "
         "seeds 10; reads --apps, --out, --reading)"),
        # The bound's arms, its trace, and a bound printed for a tiny cluster: 2 GPUs.
        (["simulate", "--experiment", "openb-bound", "--policy", "fgd", "--trace", trace], 2,
         "--policy fgd: --experiment openb-bound's arms are ip and lp"),
        (["simulate", "--experiment", "openb-defrag"], 2,
         "--experiment openb-defrag needs --trace POD_CSV"),
        (["simulate", "--experiment", "openb-bound"], 2,
         "--experiment openb-bound needs --trace POD_CSV"),
        (["simulate", "--experiment", "openb-bound", "--trace", trace, "--nodes", two_gpus,
          "--policy", "lp"], 0, "openb_pod_list_default on 2 GPUs, seeds 42..42"),
        # An arm the experiment does not have is a usage error that lists its arms.
        (["simulate", "--experiment", "online-offline", "--policy", "fgd"], 2,
         "unknown policy 'fgd' (one of online-only, ts, pb-ts, muxflow"),
        (["simulate", "--experiment", "calibrate"], 2, "--experiment calibrate needs --data DIR"),
        # openb-alloc's default seeds are seed 42 alone, as --help says (not 1..42).
        (["simulate", "--experiment", "openb-alloc", "--trace", trace, "--nodes", two_gpus,
          "--policy", "best-fit", "--json"], 0, '"seed": 42'),
        # tessera plan: its input, and the plan against whole GPUs (docs/planning.md).
        (["plan"], 2, "give a services file or --example"),
        (["plan", "--example", "thesis-slo4", "--gpus", "A30"], 2,
         "--gpus goes with a services file; an example has its own menu"),
        (["plan", "--example", "thesis-slo4"], 0,
         "plan: 6 services | shared (exact): 3 GPUs (A30-24GB: 3)"),
    ]


def main():
    tmp = tempfile.mkdtemp(prefix="tessera-usage-")
    failed = []
    try:
        all_cases = cases(tmp)
        for args, want_rc, want in all_cases:
            done = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=600,
                                  cwd=tmp)
            out = done.stdout + done.stderr
            if done.returncode != want_rc or want not in out:
                failed.append(f"tessera {' '.join(args)}: exit {done.returncode} (want "
                              f"{want_rc}), output {out[-400:]!r}, want {want!r}")
            elif want_rc != 0 and len(done.stderr.strip().splitlines()) != 1:
                failed.append(f"tessera {' '.join(args)}: more than one line: {done.stderr!r}")
        for f in failed:
            print("FAIL", f)
        print(f"{len(all_cases) - len(failed)} passed, {len(failed)} failed")
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
