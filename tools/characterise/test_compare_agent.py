"""Tests of compare_agent.py on the H200 captures (tests/agent/fixtures/h200, issue #42): the
fields read from nvidia-smi's XML (values as the XML prints them), and the comparison of the
agent's output from before the memory fix, which disagrees on memory in use only.

Run: python3 -m unittest discover -s tools/characterise
"""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_agent as ca  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "..", "tests", "agent", "fixtures", "h200")


class SmiFieldsTest(unittest.TestCase):
    def test_busy_fields_as_the_xml_prints_them(self):
        f = ca.smi_fields(os.path.join(FIXTURES, "nvidia-smi-busy.xml"))
        self.assertEqual(f["product_name"], "NVIDIA H200")
        # FB Memory Usage: Total 143771 = Reserved 616 + Used 5491 + Free 137666 (-2 rounding).
        self.assertEqual((f["memory_total_mib"], f["memory_reserved_mib"], f["memory_used_mib"],
                          f["memory_free_mib"]), (143771, 616, 5491, 137666))
        self.assertEqual((f["gpu_util_pct"], f["memory_util_pct"]), (100, 6))
        self.assertEqual((f["power_w"], f["sm_clock_mhz"]), (694.91, 1980))
        self.assertEqual((f["mps_clients"], f["processes"], f["mig_enabled"]), (0, 1, False))

    def test_mps_client_is_counted_not_the_server(self):
        f = ca.smi_fields(os.path.join(FIXTURES, "nvidia-smi-mps.xml"))
        self.assertEqual((f["mps_clients"], f["processes"]), (1, 2))

    def test_the_committed_json_is_what_the_tool_writes(self):
        for state in ("idle", "busy", "mps"):
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "smi.json")
                with contextlib.redirect_stdout(io.StringIO()):
                    ca.main([FIXTURES, state, "--smi-json", out])
                with open(out) as a, open(os.path.join(FIXTURES, f"nvidia-smi-{state}.json")) as b:
                    self.assertEqual(json.load(a), json.load(b))


class CompareTest(unittest.TestCase):
    def test_before_the_fix_only_memory_in_use_disagrees(self):
        for state, used in (("busy", (6105, 5491)), ("mps", (6169, 5555))):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = ca.main([FIXTURES, state])
            self.assertEqual(rc, 1)
            bad = [line for line in out.getvalue().splitlines() if line.endswith("| NO |")]
            self.assertEqual(bad, [f"| FB used (MiB) | {used[0]}.0 | {used[1]}.0 | NO |"])

    def test_tolerances(self):
        self.assertTrue(ca.agrees(690.78, 694.91, 0.03 * 694.91 + 2))
        self.assertFalse(ca.agrees(600, 694.91, 0.03 * 694.91 + 2))
        self.assertFalse(ca.agrees(None, 1, 5))
        self.assertTrue(ca.agrees("NVIDIA H200", "NVIDIA H200", None))


if __name__ == "__main__":
    unittest.main()
