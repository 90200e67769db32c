"""Tests of scaling.py (Ch. 6.3's x pods on x equal MPS partitions) without a GPU: the plan, the
rows by hand, and a whole run with test_characterise's stand-in runner (it halves its QPS beside
any neighbour) and stand-in MPS control, whose daemon must be shut down.

Run: python3 -m unittest discover -s tools/characterise
"""

import contextlib
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaling  # noqa: E402
import test_characterise as tc  # noqa: E402


class ScalingPlanTest(unittest.TestCase):
    def test_each_x_alone_then_together(self):
        a = scaling.parse_args(["--out", "x", "--models", "resnet50", "--batches", "1,32"])
        self.assertEqual(scaling.plan(a), [
            (("resnet50", 1), [("alone", 1), ("alone", 2), ("together", 2), ("alone", 4),
                               ("together", 4)]),
            (("resnet50", 32), [("alone", 1), ("alone", 2), ("together", 2), ("alone", 4),
                                ("together", 4)])])
        self.assertEqual([scaling.mps_of(x) for x in (1, 2, 3, 4)], [100, 50, 33, 25])

    def test_bad_arguments_name_the_flag(self):
        for argv, flag in ((["--pods", "1,101"], "--pods"), (["--models", "vgg"], "--models"),
                           (["--windows", "2"], "--windows")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit):
                scaling.parse_args(["--out", "x"] + argv)
            self.assertIn(flag, err.getvalue())

    def test_rows_by_hand(self):
        m = [{"app": "a/bs1", "run": "alone", "pods": 1, "mps": 100, "qps": [[100, 100]]},
             {"app": "a/bs1", "run": "alone", "pods": 4, "mps": 25, "qps": [[40, 60]]},
             {"app": "a/bs1", "run": "together", "pods": 4, "mps": 25,
              "qps": [[45, 45], [40, 40], [50, 50], [45, 45]]}]
        self.assertEqual(scaling.rows(m), [
            ("a/bs1", 1, 100, 100.0, 100.0, 1.0, 1.0, 2),
            # four at 25 %: 45 each against 50 alone; a total of 180 against 100 on the whole
            ("a/bs1", 4, 25, 50.0, 45.0, 0.9, 1.8, 8)])


class ScalingRunTest(unittest.TestCase):
    setUp = tc.CampaignTest.setUp
    tearDown = tc.CampaignTest.tearDown
    mps_calls = tc.CampaignTest.mps_calls
    process_starts = tc.CampaignTest.process_starts

    def test_a_run_writes_kept_and_total_and_stops_its_mps_daemon(self):
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            self.assertEqual(scaling.main(["--out", self.out, "--runner", self.runner,
                                           "--models", "resnet50", "--batches", "8",
                                           "--window-s", "0.01", "--warmup-s", "0",
                                           "--rewarm-s", "0"]), 0)
        self.assertEqual([c[0] for c in self.mps_calls()], ["start", "quit"])
        self.assertEqual(self.process_starts(), 1 + 2 + 4)
        with open(os.path.join(self.out, "scaling.csv")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], "app,pods,mps,alone_qps,together_qps,kept,total_vs_whole,"
                                   "count")
        got = {int(r[1]): [float(v) for v in r[3:8]] for r in (x.split(",") for x in lines[1:])}
        # The stand-in: 1000 x share + window 0..4 (mean + 2), halved beside a neighbour.
        self.assertEqual(got[1], [1002.0, 1002.0, 1.0, 1.0, 5.0])
        self.assertEqual(got[2][:2], [502.0, 252.0])
        self.assertAlmostEqual(got[2][2], 252 / 502)
        self.assertAlmostEqual(got[2][3], 2 * 252 / 1002)
        self.assertEqual(got[4][:2], [252.0, 127.0])
        self.assertAlmostEqual(got[4][2], 127 / 252)
        self.assertAlmostEqual(got[4][3], 4 * 127 / 1002)
        self.assertEqual(got[4][4], 20)  # four processes' five windows
        with open(os.path.join(self.out, "measurements.jsonl")) as f:
            self.assertEqual([json.loads(x)["run"] for x in f],
                             ["alone", "alone", "together", "alone", "together"])
        self.assertIn("x4 at  25%", printed.getvalue())


if __name__ == "__main__":
    unittest.main()
