"""The agent against nvidia-smi, field by field (issue #42).

Reads what device_agent.sh captured for one moment (`STATE` is idle, busy or mps):
  nvidia-smi-STATE.xml (nvidia-smi -q -x), agent-STATE.json (tessera agent --once --json) and,
  where there is one, metrics-STATE.txt (the agent's /metrics)
and prints one row per field the agent reports: the agent's value, nvidia-smi's, and whether
they agree. Readings that move between two reads taken a second apart (power, clocks, memory
in use) agree within a tolerance; identities agree exactly. `--smi-json` writes the fields read
from nvidia-smi's XML as JSON (the agent's NVML fixture test reads that: tests/agent/fixtures).

Usage: python3 compare_agent.py DIR STATE [--smi-json OUT]
Exit status: 0 when every field agrees, 1 otherwise.
"""

import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


def number(text):
    """'5491 MiB' -> 5491.0, '100 %' -> 100.0, 'N/A' -> None."""
    m = re.match(r"\s*(-?[0-9.]+)", text or "")
    return float(m.group(1)) if m else None


def smi_fields(xml_path):
    """The fields of GPU 0 in nvidia-smi -q -x that the agent also reports."""
    gpu = ET.parse(xml_path).getroot().find("gpu")

    def text(path):
        e = gpu.find(path)
        return e.text.strip() if e is not None and e.text else None

    procs = gpu.findall("processes/process_info")
    return {
        "product_name": text("product_name"),
        "uuid": text("uuid"),
        "memory_total_mib": number(text("fb_memory_usage/total")),
        "memory_reserved_mib": number(text("fb_memory_usage/reserved")),
        "memory_used_mib": number(text("fb_memory_usage/used")),
        "memory_free_mib": number(text("fb_memory_usage/free")),
        "mig_enabled": text("mig_mode/current_mig") == "Enabled",
        "gpu_util_pct": number(text("utilization/gpu_util")),
        "memory_util_pct": number(text("utilization/memory_util")),
        "power_w": number(text("gpu_power_readings/instant_power_draw")
                          or text("gpu_power_readings/power_draw")),
        "sm_clock_mhz": number(text("clocks/sm_clock")),
        # An MPS client shows as type M+C; the MPS server itself as C.
        "mps_clients": sum(1 for p in procs if "M" in (p.findtext("type") or "")),
        "processes": len(procs),
    }


def metric(metrics_text, name):
    for line in metrics_text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def rows(smi, agent, metrics_text):
    """(field, agent value, nvidia-smi value, tolerance) for every field the agent reports."""
    gpu = agent["gpus"][0]
    out = [
        ("product name", gpu["product_name"], smi["product_name"], None),
        ("uuid", gpu["uuid"], smi["uuid"], None),
        ("memory total (MiB)", gpu["memory_mib"], smi["memory_total_mib"], 0),
        ("MIG enabled", gpu["mig_enabled"], smi["mig_enabled"], None),
        ("partitions (whole GPU: 1)", len(gpu["partitions"]),
         1 if not smi["mig_enabled"] else None, 0),
    ]
    if metrics_text:
        m = lambda name: metric(metrics_text, name)  # noqa: E731
        out += [
            ("FB used (MiB)", m("DCGM_FI_DEV_FB_USED"), smi["memory_used_mib"], 16),
            ("FB free (MiB)", m("DCGM_FI_DEV_FB_FREE"), smi["memory_free_mib"], 16),
            ("GPU utilisation (%)", m("DCGM_FI_DEV_GPU_UTIL"), smi["gpu_util_pct"], 5),
            ("engine active (0..1)", m("DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
             smi["gpu_util_pct"] / 100, 0.05),
            ("DRAM active (0..1)", m("DCGM_FI_PROF_DRAM_ACTIVE"), smi["memory_util_pct"] / 100,
             0.05),
            ("SM clock (MHz)", m("DCGM_FI_DEV_SM_CLOCK"), smi["sm_clock_mhz"], 30),
            # Instantaneous power moves by a few per cent between two reads.
            ("power (W)", m("DCGM_FI_DEV_POWER_USAGE"), smi["power_w"],
             0.03 * (smi["power_w"] or 0) + 2),
            ("MPS clients", m("tessera_mps_clients"), smi["mps_clients"], 0),
        ]
    return out


def agrees(a, s, tol):
    if a is None or s is None:
        return False
    if tol is None:
        return a == s
    return abs(float(a) - float(s)) <= tol


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir")
    p.add_argument("state")
    p.add_argument("--smi-json", help="write nvidia-smi's fields as JSON to this file")
    a = p.parse_args(argv)
    smi = smi_fields(os.path.join(a.dir, f"nvidia-smi-{a.state}.xml"))
    if a.smi_json:
        with open(a.smi_json, "w", encoding="utf-8") as f:
            json.dump(smi, f, indent=1)
            f.write("\n")
    agent_path = os.path.join(a.dir, f"agent-{a.state}.json")
    if not os.path.exists(agent_path):
        return 0
    with open(agent_path, encoding="utf-8") as f:
        agent = json.load(f)
    metrics_path = os.path.join(a.dir, f"metrics-{a.state}.txt")
    metrics_text = open(metrics_path, encoding="utf-8").read() if os.path.exists(
        metrics_path) else ""
    ok = True
    print(f"| field ({a.state}) | agent | nvidia-smi -q | agrees |")
    print("| --- | --- | --- | --- |")
    for field, av, sv, tol in rows(smi, agent, metrics_text):
        good = agrees(av, sv, tol)
        ok &= good
        print(f"| {field} | {av} | {sv} | {'yes' if good else 'NO'} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
