"""One measured inference process of the characterisation campaign (issue #20).

Builds a model from its definition with random weights (nothing is downloaded), warms it up,
prints `{"ready": true}`, then serves lines on stdin: each `go` (the processes of a pair are
sent theirs together) re-warms for `--rewarm-s`, runs back-to-back batches for `--windows`
windows of `--window-s` seconds and prints one JSON line: {"model", "batch", "qps": [samples/s
per window], "device"}; `quit` or the end of stdin ends it. One process can so be measured
alone and then in several pairs without paying its start (import, build, warm-up) again
(characterise.py --pool). Run by characterise.py, which sets the MPS limits through the
environment (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, read once when the process's context is made).

Only this file needs PyTorch and a GPU; it is imported lazily so the rest of the harness (and
its tests) run anywhere.
"""

import argparse
import json
import sys
import time

# The models: torchvision's definitions and a BERT-base-sized encoder from its configuration
# (12 layers, hidden 768, 12 heads, FFN 3072, sequence 128), all with random weights.
MODELS = ("resnet50", "mobilenet_v2", "ssd", "bert-base")
BERT_SEQ = 128


def build(model, batch):
    """The model (eval mode, on the GPU) and one input batch."""
    import torch
    import torchvision

    dev = torch.device("cuda")
    if model == "resnet50":
        net = torchvision.models.resnet50(weights=None)
        x = torch.randn(batch, 3, 224, 224)
    elif model == "mobilenet_v2":
        net = torchvision.models.mobilenet_v2(weights=None)
        x = torch.randn(batch, 3, 224, 224)
    elif model == "ssd":  # SSD-style detector: SSDlite on MobileNetV3, 320 x 320
        net = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
            weights=None, weights_backbone=None)
        x = torch.randn(batch, 3, 320, 320)
    elif model == "bert-base":
        layer = torch.nn.TransformerEncoderLayer(d_model=768, nhead=12, dim_feedforward=3072,
                                                 activation="gelu", batch_first=True)
        net = torch.nn.Sequential(torch.nn.Embedding(30522, 768),
                                  torch.nn.TransformerEncoder(layer, num_layers=12))
        x = torch.randint(0, 30522, (batch, BERT_SEQ))
    else:
        raise ValueError(f"unknown model {model!r}")
    net = net.eval().to(dev)
    x = x.to(dev)
    if model == "ssd":
        x = list(x)  # torchvision detectors take a list of images
    return net, x


def measure(step, batch, windows, window_s, clock=time.perf_counter):
    """Samples per second in each of `windows` windows of `window_s` seconds; `step()` runs one
    batch to completion."""
    qps = []
    for _ in range(windows):
        start = clock()
        done = 0
        while True:
            step()
            done += batch
            elapsed = clock() - start
            if elapsed >= window_s:
                break
        qps.append(done / elapsed)
    return qps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--batch", required=True, type=int)
    p.add_argument("--windows", type=int, default=5)
    p.add_argument("--window-s", type=float, default=2.0)
    p.add_argument("--warmup-s", type=float, default=3.0)
    p.add_argument("--rewarm-s", type=float, default=0.0,
                   help="batches run untimed after each go, before the windows")
    a = p.parse_args(argv)

    import torch

    net, x = build(a.model, a.batch)

    def step():
        with torch.inference_mode():
            net(x)
        torch.cuda.synchronize()

    def warm(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            step()

    warm(a.warmup_s)
    print(json.dumps({"ready": True}), flush=True)
    device = torch.cuda.get_device_name(0)
    return serve(sys.stdin, lambda: (warm(a.rewarm_s),
                                     measure(step, a.batch, a.windows, a.window_s))[1],
                 lambda qps: print(json.dumps({"model": a.model, "batch": a.batch, "qps": qps,
                                               "device": device}), flush=True))


def serve(lines, run, report):
    """Answers each `go` with run()'s windows through report(); stops at `quit` or the end of
    `lines`. Anything else is a protocol error (exit 1)."""
    for line in lines:
        cmd = line.strip()
        if cmd == "quit":
            return 0
        if cmd != "go":
            return 1
        report(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
