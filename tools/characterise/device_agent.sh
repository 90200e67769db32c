#!/usr/bin/env bash
# The agent against nvidia-smi on a real GPU, as one device run (issue #42): the same moment
# read three ways — `nvidia-smi -q -x`, NVML through nvidia-ml-py (nvml_dump.py) and
# `tessera agent --once --json` — idle, with one CUDA process, and with one MPS client; and the
# agent's /metrics while the process runs. compare_agent.py compares them field by field.
# Everything goes into $OUT/probe.tar.gz and $OUT/log.txt (at most 8 files come back).
# Never changes MIG mode, clocks or compute mode; the MPS daemon it starts is shut down here.
# Usage (on the GPU machine, repository root; TESSERA=path to the binary, LD_LIBRARY_PATH set
# for its libraries when it was built elsewhere):
#   OUT=/some/dir TESSERA=build/tessera tools/characterise/device_agent.sh
set -uo pipefail
out=${OUT:?set OUT}
t=${TESSERA:-build/tessera}
p="$out/probe"
mkdir -p "$p"
exec > >(tee -a "$out/log.txt") 2>&1
here=$(dirname "$0")
"$t" version || { echo "tessera does not run here"; ldd "$t"; }

snapshot() {  # $1: name
  nvidia-smi -q -x > "$p/smi-$1.xml"
  nvidia-smi -q > "$p/smi-$1.txt"
  python3 "$here/nvml_dump.py" > "$p/nvml-$1.json" 2> "$p/nvml-$1.err"
  "$t" agent --once --json --node probe > "$p/agent-$1.json" 2> "$p/agent-$1.err"
  echo "== $1: agent rc $? ($(wc -c < "$p/agent-$1.json") bytes)"
}

load() {  # a CUDA process busy for $1 s: matrix products, 4 GiB held
  python3 - "$1" <<'PY' &
import sys, time, torch
x = torch.randn(8192, 8192, device="cuda")
hold = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
end = time.time() + float(sys.argv[1])
while time.time() < end:
    y = x @ x
torch.cuda.synchronize()
PY
}

metrics() {  # the agent as a daemon for a few rounds, then /metrics
  "$t" agent --node probe --listen 127.0.0.1:9479 --interval 1 2> "$p/agent-daemon-$1.err" &
  local pid=$!
  sleep 3.5
  python3 -c 'import urllib.request as u; print(u.urlopen("http://127.0.0.1:9479/metrics").read().decode())' > "$p/metrics-$1.txt"
  kill $pid; wait $pid
}

snapshot idle
load 14; lp=$!; sleep 6
snapshot busy
metrics busy
wait $lp

mpsdir=$(mktemp -d /tmp/tessera-probe-XXXX)
export CUDA_MPS_PIPE_DIRECTORY=$mpsdir/pipe CUDA_MPS_LOG_DIRECTORY=$mpsdir/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
if nvidia-cuda-mps-control -d; then
  load 12; lp=$!; sleep 6
  snapshot mps
  metrics mps
  wait $lp
  echo quit | nvidia-cuda-mps-control
fi
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
nvidia-smi --query-gpu=mig.mode.current --format=csv
tar czf "$out/probe.tar.gz" -C "$out" probe && rm -rf "$p"
exit 0
