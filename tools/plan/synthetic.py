#!/usr/bin/env python3
"""Writes a synthetic `tessera plan` input: N services drawn (seeded) from data/apps.yaml's
applications, SLOs log-uniform in [5, 2000] QPS, on a menu of 8 GPU models. For the planning
benchmark (docs/planning.md): python3 tools/plan/synthetic.py 1000 > /tmp/plan-1000.yaml"""
import random
import re
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
apps = re.findall(r"^  - key: (\S+)", open("data/apps.yaml").read(), re.M)
apps = apps[: apps.index("train/resnet50")] if "train/resnet50" in apps else apps
rng = random.Random(1)
print("gpus: [V100-32GB, T4, A10, A30-24GB, A100-40GB, A100-80GB, H100-80GB, H200-141GB]")
print("services:")
for i in range(n):
    print(f"  - name: svc-{i:04}")
    print(f"    app: {rng.choice(apps)}")
    print(f"    slo_qps: {round(5 * 400 ** rng.random(), 2)}")
    print(f"    load: {{trough: 0.3, peak_hour: {rng.randrange(24)}}}")
