"""Tests of the characterisation harness without a GPU (issue #20): argument handling, the plan,
the predictor's CSVs from measurements (numbers by hand), and a whole campaign with a stand-in
runner and a stand-in nvidia-cuda-mps-control, whose daemon must be shut down even when a run
fails. With TESSERA_BIN set (the test command sets it), the CSVs are also loaded by
`tessera predict evaluate` and `tessera predict interference --data`.

Run: python3 -m unittest discover -s tools/characterise
"""

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import characterise as ch  # noqa: E402
import runner  # noqa: E402

# A runner that needs no GPU: ready, waits for "go", then QPS that depend on the model, the
# batch, the MPS limit and whether a neighbour runs (a file per live process in $STANDIN_DIR).
STANDIN_RUNNER = textwrap.dedent("""\
    import argparse, json, os, sys, time
    p = argparse.ArgumentParser()
    for f in ("--model", "--batch", "--windows", "--window-s", "--warmup-s", "--rewarm-s"):
        p.add_argument(f)
    a = p.parse_args()
    if a.model == os.environ.get("STANDIN_FAIL"):
        sys.exit(3)
    with open(os.environ["STANDIN_STARTS"], "a") as f:
        f.write(a.model + "\\n")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        assert line.strip() == "go"
        # A file per process while it is measured; the processes of a pair are sent "go"
        # together, so each one counts the other's file after a short wait.
        busy = os.path.join(os.environ["STANDIN_DIR"], str(os.getpid()))
        open(busy, "w").close()
        time.sleep(0.15)
        neighbours = len(os.listdir(os.environ["STANDIN_DIR"])) - 1
        time.sleep(0.15)
        share = int(os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100")) / 100
        base = {"resnet50": 1000, "mobilenet_v2": 3000}[a.model] * share
        qps = [base * (0.5 if neighbours else 1) + w for w in range(int(a.windows))]
        print(json.dumps({"model": a.model, "batch": int(a.batch), "qps": qps,
                          "device": "stand-in"}), flush=True)
        os.remove(busy)
""")

# nvidia-cuda-mps-control: "-d" starts the daemon, "quit" on stdin stops it; each call is logged
# with the pipe directory it was given.
STANDIN_MPS = textwrap.dedent("""\
    #!/bin/sh
    if [ "$1" = "-d" ]; then
      echo "start $CUDA_MPS_PIPE_DIRECTORY" >> "$STANDIN_MPS_LOG"
    else
      read cmd
      echo "$cmd $CUDA_MPS_PIPE_DIRECTORY" >> "$STANDIN_MPS_LOG"
    fi
""")


def windows(*values):
    return list(values)


class ArgumentsTest(unittest.TestCase):
    def error(self, argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            ch.parse_args(["--gpu-model", "H100-80GB", "--out", "x"] + argv)
        self.assertEqual(e.exception.code, 2)
        return err.getvalue()

    def test_bad_arguments_are_usage_errors_naming_the_flag(self):
        self.assertIn("at least 5 timed windows", self.error(["--windows", "3"]))
        self.assertIn("--models: unknown vgg", self.error(["--models", "resnet50,vgg"]))
        self.assertIn("'1,x' is not a comma-separated list", self.error(["--batches", "1,x"]))
        self.assertIn("must be a positive integer", self.error(["--batches", "8,0"]))
        self.assertIn("at most 100", self.error(["--mps", "150"]))
        self.assertIn("invalid choice", self.error(["--pairs", "some"]))
        self.assertIn("--window-s must be positive", self.error(["--window-s", "0"]))

    def test_defaults_are_the_issues_campaign(self):
        a = ch.parse_args(["--gpu-model", "H100-80GB", "--out", "x"])
        self.assertEqual(a.models, ["resnet50", "mobilenet_v2", "ssd", "bert-base"])
        self.assertEqual(a.batches, [1, 8, 32])
        self.assertEqual(a.mps, [100, 50, 25])
        self.assertEqual(a.windows, 5)
        self.assertEqual(ch.MODELS, runner.MODELS)

    def test_the_plan(self):
        a = ch.parse_args(["--gpu-model", "H100-80GB", "--out", "x"])
        runs = ch.plan(a)
        # 12 applications: 12 alone without MPS + 3 x 12 under MPS; pairs at the same batch
        # size, a model with itself included: 3 x C(4 + 1, 2) = 30, under MPS and without.
        self.assertEqual(len(runs), 12 + 36 + 30 + 30)
        self.assertEqual(runs[0], ("alone", None, [("resnet50", 1)]))
        self.assertIn(("pair", 50, [("ssd", 8), ("bert-base", 8)]), runs)
        self.assertIn(("pair", None, [("resnet50", 32), ("resnet50", 32)]), runs)
        a.pairs = "all"
        self.assertEqual(len(ch.plan(a)), 48 + 2 * 78)  # C(12 + 1, 2) = 78
        a.pairs = "none"
        self.assertEqual(len(ch.plan(a)), 48)
        self.assertEqual(ch.estimated_s(a, ch.plan(a)), 48 * (15 + 3 + 5 * 2))

    def test_a_dry_run_prints_the_plan_and_starts_nothing(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = ch.main(["--gpu-model", "A100-40GB", "--out", "/nonexistent/x", "--dry-run",
                          "--models", "resnet50", "--batches", "8", "--mps", "50"])
        self.assertEqual(rc, 0)
        self.assertEqual(out.getvalue().splitlines(), [
            "alone no MPS resnet50/bs8", "alone MPS 50% resnet50/bs8",
            "pair MPS 50% resnet50/bs8 + resnet50/bs8",
            "pair no MPS resnet50/bs8 + resnet50/bs8", "4 runs, about 2 min"])
        self.assertFalse(os.path.exists("/nonexistent/x"))


class RunnerTest(unittest.TestCase):
    def test_measure_counts_samples_per_window(self):
        t = [0.0]

        def clock():
            return t[0]

        def step():
            t[0] += 0.25  # one batch of 8 takes 0.25 s: 32 samples/s

        self.assertEqual(runner.measure(step, 8, 3, 1.0, clock), [32.0, 32.0, 32.0])
        self.assertEqual(ch.app_key("bert-base", 8), "bert-base/bs8/seq128")
        self.assertEqual(ch.app_key("resnet50", 1), "resnet50/bs1")
        self.assertEqual(ch.config_key("H100-80GB", 25), "H100-80GB/whole/25")


class CsvTest(unittest.TestCase):
    MEASURED = [
        {"run": "alone", "mps": None, "app": "resnet50/bs8", "aggressor": None,
         "qps": windows(100, 102, 98, 100, 100)},
        {"run": "alone", "mps": 50, "app": "resnet50/bs8", "aggressor": None,
         "qps": windows(50, 50, 50, 50, 50)},
        {"run": "alone", "mps": 100, "app": "resnet50/bs8", "aggressor": None,
         "qps": windows(99, 99, 99, 99, 99)},
        {"run": "pair", "mps": 50, "app": "resnet50/bs8", "aggressor": "ssd/bs8",
         "qps": windows(40, 40, 40, 40, 40)},
        {"run": "pair", "mps": None, "app": "resnet50/bs8", "aggressor": "ssd/bs8",
         "qps": windows(60, 50, 60, 50, 60)},
        # ssd/bs8 has no alone run: its side of the pair has nothing to compare with.
        {"run": "pair", "mps": None, "app": "ssd/bs8", "aggressor": "resnet50/bs8",
         "qps": windows(10, 10, 10, 10, 10)},
        # With itself: two victims of one cell, pooled (10 windows).
        {"run": "pair", "mps": 50, "app": "resnet50/bs8", "aggressor": "resnet50/bs8",
         "qps": windows(25, 25, 25, 25, 25)},
        {"run": "pair", "mps": 50, "app": "resnet50/bs8", "aggressor": "resnet50/bs8",
         "qps": windows(35, 35, 35, 35, 35)},
    ]

    def test_profile_rows_are_window_means_and_variances(self):
        # (100 + 102 + 98 + 100 + 100) / 5 = 100; variance (0 + 4 + 4 + 0 + 0) / 4 = 2.
        self.assertEqual(ch.profile_rows("A100-40GB", self.MEASURED), [
            ("resnet50/bs8", "A100-40GB/whole/100", 100.0, 5, 2.0),
            ("resnet50/bs8", "A100-40GB/whole/50", 50.0, 5, 0.0)])

    def test_interference_rows_are_the_fraction_of_qps_lost(self):
        rows = ch.interference_rows(self.MEASURED)
        self.assertEqual(len(rows), 3)
        kind, victim, aggressor, value, n, var = rows[0]
        # 40 beside ssd against 50 alone at 50 % MPS: 20 % lost.
        self.assertEqual((kind, victim, aggressor, n), ("mps", "resnet50/bs8", "ssd/bs8", 5))
        self.assertAlmostEqual(value, 0.2)
        self.assertAlmostEqual(var, 0.0)
        # Time-slicing, against 100 alone on the whole GPU: 0.4, 0.5, 0.4, 0.5, 0.4: mean 0.44,
        # variance (3 x 0.04^2 + 2 x 0.06^2) / 4 = 0.003.
        kind, victim, aggressor, value, n, var = rows[1]
        self.assertEqual((kind, victim, aggressor, n), ("timeslice", "resnet50/bs8", "ssd/bs8", 5))
        self.assertAlmostEqual(value, 0.44)
        self.assertAlmostEqual(var, 0.003)
        # Pooled self-pair: 0.5 x 5 and 0.3 x 5: mean 0.4, variance 10 x 0.1^2 / 9.
        kind, victim, aggressor, value, n, var = rows[2]
        self.assertEqual((kind, victim, aggressor, n), ("mps", "resnet50/bs8", "resnet50/bs8", 10))
        self.assertAlmostEqual(value, 0.4)
        self.assertAlmostEqual(var, 0.1 / 9)

    def test_the_files_are_the_predictors_long_csv(self):
        with tempfile.TemporaryDirectory() as out:
            ch.write_outputs(out, "A100-40GB", self.MEASURED[:4])
            with open(os.path.join(out, "profile.csv")) as f:
                self.assertEqual(f.read(), "row,column,value,count,variance\n"
                                 "resnet50/bs8,A100-40GB/whole/100,100.0,5,2.0\n"
                                 "resnet50/bs8,A100-40GB/whole/50,50.0,5,0.0\n")
            with open(os.path.join(out, "interference.csv")) as f:
                lines = f.read().splitlines()
            self.assertEqual(lines[0], "kind,victim,aggressor,value,count,variance")
            self.assertEqual(lines[1].split(",")[:3], ["mps", "resnet50/bs8", "ssd/bs8"])
            with open(os.path.join(out, "measurements.jsonl")) as f:
                self.assertEqual([json.loads(line) for line in f], self.MEASURED[:4])


class CampaignTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.runner = os.path.join(d, "standin_runner.py")
        with open(self.runner, "w") as f:
            f.write(STANDIN_RUNNER)
        bindir = os.path.join(d, "bin")
        os.mkdir(bindir)
        mps = os.path.join(bindir, "nvidia-cuda-mps-control")
        with open(mps, "w") as f:
            f.write(STANDIN_MPS)
        os.chmod(mps, os.stat(mps).st_mode | stat.S_IEXEC)
        os.mkdir(os.path.join(d, "live"))
        self.mps_log = os.path.join(d, "mps.log")
        self.starts = os.path.join(d, "starts.log")
        self.env = {"PATH": bindir + os.pathsep + os.environ["PATH"],
                    "STANDIN_DIR": os.path.join(d, "live"), "STANDIN_MPS_LOG": self.mps_log,
                    "STANDIN_STARTS": self.starts}
        self.saved = {k: os.environ.get(k) for k in list(self.env) + ["STANDIN_FAIL"]}
        os.environ.update(self.env)
        self.out = os.path.join(d, "out")

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self.tmp.cleanup()

    def argv(self):
        return ["--gpu-model", "A100-40GB", "--out", self.out, "--runner", self.runner,
                "--models", "resnet50,mobilenet_v2", "--batches", "1,8", "--mps", "100,50,25",
                "--windows", "5", "--window-s", "0.01", "--warmup-s", "0"]

    def mps_calls(self):
        with open(self.mps_log) as f:
            return [line.split() for line in f]

    def process_starts(self):
        with open(self.starts) as f:
            return len(f.read().split())

    def test_a_campaign_writes_the_csvs_and_stops_its_mps_daemon(self):
        self.check_campaign(self.argv())
        # One process per run: 4 alone without MPS, 12 under MPS, 2 x 6 pairs of 2 each.
        self.assertEqual(self.process_starts(), 4 + 12 + 2 * 6 * 2)

    def test_a_pooled_campaign_measures_the_same_with_a_process_per_setting(self):
        self.check_campaign(self.argv() + ["--pool", "--rewarm-s", "0"])
        # Pools: 4 applications without MPS (alone on the whole GPU); under MPS 4 x 3 limits
        # plus a second process at 50 % for each self-pair (4); time-sliced pairs: 4 + 4.
        self.assertEqual(self.process_starts(), 4 + (12 + 4) + (4 + 4))

    def test_a_pooled_campaign_past_its_budget_keeps_what_it_measured(self):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            self.assertEqual(ch.main(self.argv() + ["--pool", "--budget-s", "0.000001"]), 0)
        # The first phase started within the budget; its first run is past it: nothing ran.
        self.assertIn("past the budget, not run: alone no MPS resnet50/bs1", err.getvalue())
        with open(os.path.join(self.out, "profile.csv")) as f:
            self.assertEqual(f.read(), "row,column,value,count,variance\n")

    def test_csv_from_a_partial_log(self):
        os.makedirs(self.out)
        log = os.path.join(self.out, "m.jsonl")
        with open(log, "w") as f:
            for m in CsvTest.MEASURED[:4]:
                f.write(json.dumps(m) + "\n")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(ch.main(["--gpu-model", "A100-40GB", "--out", self.out,
                                      "--csv-from", log]), 0)
        with open(os.path.join(self.out, "profile.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 3)

    def check_campaign(self, argv):
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(ch.main(argv), 0)
        self.assertFalse(os.path.exists(os.path.join(self.out, "measurements.partial.jsonl")))
        calls = self.mps_calls()
        self.assertEqual([c[0] for c in calls], ["start", "quit"])
        self.assertEqual(calls[0][1], calls[1][1])
        self.assertTrue(calls[0][1].startswith(tempfile.gettempdir()))
        self.assertFalse(os.path.exists(calls[0][1]))  # the temporary folder is gone
        with open(os.path.join(self.out, "profile.csv")) as f:
            profile = [line.split(",") for line in f.read().splitlines()[1:]]
        # 4 applications x (whole, MPS 50, MPS 25); MPS 100 only in measurements.jsonl.
        self.assertEqual(len(profile), 12)
        cells = {(r[0], r[1]): float(r[2]) for r in profile}
        # The stand-in: 1000 x share + window index 0..4 (mean + 2).
        self.assertEqual(cells[("resnet50/bs8", "A100-40GB/whole/100")], 1002.0)
        self.assertEqual(cells[("resnet50/bs8", "A100-40GB/whole/25")], 252.0)
        with open(os.path.join(self.out, "interference.csv")) as f:
            rows = [line.split(",") for line in f.read().splitlines()[1:]]
        # Same-batch pairs of 2 models: 2 x 2 (victim, aggressor) cells per batch size and
        # kind (a model beside itself is one cell, pooled); 2 batch sizes, 2 kinds: 16.
        self.assertEqual(len(rows), 16)
        lost = {(r[0], r[1], r[2]): float(r[3]) for r in rows}
        # Beside a neighbour the stand-in halves its QPS: (500 + w) against (1000 + w).
        self.assertAlmostEqual(lost[("timeslice", "resnet50/bs1", "mobilenet_v2/bs1")],
                               sum(1 - (500 + w) / 1002 for w in range(5)) / 5)
        with open(os.path.join(self.out, "measurements.jsonl")) as f:
            self.assertEqual(sum(1 for _ in f), 4 * 4 + 2 * 2 * (2 * 2 + 1 * 2))
        tessera = os.environ.get("TESSERA_BIN")
        if tessera:
            for cmd in ([tessera, "predict", "evaluate", "--data",
                         os.path.join(self.out, "profile.csv"), "--missing", "0.3", "--json"],
                        [tessera, "predict", "interference", "--data",
                         os.path.join(self.out, "interference.csv"), "--kind", "timeslice",
                         "--json"]):
                done = subprocess.run(cmd, capture_output=True, text=True)
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertIsInstance(json.loads(done.stdout), dict)

    def test_a_failed_run_still_stops_the_mps_daemon(self):
        os.environ["STANDIN_FAIL"] = "mobilenet_v2"
        with self.assertRaisesRegex(RuntimeError, "mobilenet_v2/bs1 did not get ready"):
            ch.main(self.argv())
        # It failed without MPS, before the daemon was started: nothing to stop.
        self.assertFalse(os.path.exists(self.mps_log))
        # Failing under MPS: the daemon is stopped all the same.
        argv = self.argv()
        a = ch.parse_args(argv)
        runs = [r for r in ch.plan(a) if r[1] is not None]
        with self.assertRaises(RuntimeError):
            ch.campaign(a, runs)
        self.assertEqual([c[0] for c in self.mps_calls()], ["start", "quit"])
        # What was measured before the failure is kept in the partial log; no CSVs are written.
        self.assertFalse(os.path.exists(os.path.join(self.out, "profile.csv")))


if __name__ == "__main__":
    unittest.main()
