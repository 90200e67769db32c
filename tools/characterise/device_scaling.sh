#!/usr/bin/env bash
# Ch. 6.3's fixed workload on the lent GPU (#35, cause 3): x pods on x equal MPS partitions, at
# batch 1 (SingleStream-like) and batch 32 (Offline-like), sized to a 15-minute lease. Into $OUT:
#   log.txt     this script's output: versions, the GPU's facts, scaling.py's table
#   scaling/scaling.csv, scaling/measurements.jsonl
# Never changes MIG mode, clocks or compute mode; scaling.py shuts its MPS daemon down.
# Usage (on the GPU machine, from the repository root):
#   OUT=/some/dir tools/characterise/device_scaling.sh [extra scaling.py flags]
set -uo pipefail
out=${OUT:?set OUT to the output folder}
mkdir -p "$out/scaling"
exec > >(tee -a "$out/log.txt") 2>&1
echo "== $(date -u +%FT%TZ) $(uname -r)"
nvidia-smi --query-gpu=name,driver_version,mig.mode.current,compute_mode,clocks.max.sm \
  --format=csv
python3 -c 'import sys, torch, torchvision; print("python", sys.version.split()[0], "torch",
torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda)'
start=$(date +%s)
timeout -k 10 "${SCALING_TIMEOUT:-330}" python3 -u tools/characterise/scaling.py \
  --out "$out/scaling" --window-s 0.8 --budget-s "${SCALING_BUDGET:-260}" "$@"
echo "== scaling rc $? after $(( $(date +%s) - start )) s"
# An MPS daemon left by a killed run is shut down here (its pipe folder is in /tmp).
for d in /tmp/tessera-characterise-*/mps-pipe; do
  [ -d "$d" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY="$d" nvidia-cuda-mps-control
done
nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv
exit 0
