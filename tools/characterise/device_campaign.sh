#!/usr/bin/env bash
# The characterisation campaign as one device run (issue #42): the GPU's facts, then the pooled
# campaign sized to a 15-minute lease. Everything lands in $OUT (at most 8 files come back):
#   log.txt            this script's output: versions, nvidia-smi, the campaign's progress
#   nvidia-smi-q.xml   nvidia-smi -q -x before the campaign
#   campaign/measurements.jsonl (or .partial.jsonl), profile.csv, interference.csv
# Never changes MIG mode, clocks or compute mode; the MPS daemon the campaign starts is shut
# down by it (characterise.py's mps_daemon), also on failure.
# Usage (on the GPU machine, from the repository root):
#   OUT=/some/dir tools/characterise/device_campaign.sh [extra characterise.py flags]
set -uo pipefail
out=${OUT:?set OUT to the output folder}
mkdir -p "$out/campaign"
exec > >(tee -a "$out/log.txt") 2>&1
echo "== $(date -u +%FT%TZ) $(uname -r)"
nvidia-smi
nvidia-smi -q -x > "$out/nvidia-smi-q.xml"
nvidia-smi --query-gpu=name,driver_version,mig.mode.current,compute_mode,clocks.max.sm \
  --format=csv
python3 -c 'import sys, torch, torchvision; print("python", sys.version.split()[0], "torch",
torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda,
"cudnn", torch.backends.cudnn.version())'
command -v nvidia-cuda-mps-control || echo "no nvidia-cuda-mps-control on PATH"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$name" in
  *H200*) model=H200-141GB ;;
  *H100*) model=H100-80GB ;;
  *A100*80GB*) model=A100-80GB ;;
  *A100*) model=A100-40GB ;;
  *) model=unknown ;;
esac
echo "== campaign on $name ($model)"
start=$(date +%s)
timeout -k 10 "${CAMPAIGN_TIMEOUT:-330}" python3 -u tools/characterise/characterise.py \
  --gpu-model "$model" --out "$out/campaign" --pool --batches 1,8 --windows 5 \
  --window-s 0.4 --warmup-s 2 --rewarm-s 0.2 --budget-s "${CAMPAIGN_BUDGET:-270}" "$@"
rc=$?
echo "== campaign rc $rc after $(( $(date +%s) - start )) s"
if [ -f "$out/campaign/measurements.partial.jsonl" ]; then  # cut short: CSVs from what it has
  python3 tools/characterise/characterise.py --gpu-model "$model" --out "$out/campaign" \
    --csv-from "$out/campaign/measurements.partial.jsonl"
fi
# An MPS daemon left by a killed campaign is shut down here (its pipe folder is in /tmp).
for d in /tmp/tessera-characterise-*/mps-pipe; do
  [ -d "$d" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY="$d" nvidia-cuda-mps-control
done
nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv
exit 0
