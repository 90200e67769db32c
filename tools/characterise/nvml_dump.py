"""Every NVML reading the agent takes (src/agent/nvml_backend.cc), as NVML answers it, through
NVIDIA's Python bindings (nvidia-ml-py's pynvml), as JSON on stdout. Run on the GPU machine
beside `nvidia-smi -q -x` and `tessera agent --once --json`; the three are compared field by
field (compare_agent.py), and the dump, serials removed, is the stand-in NVML's fixture of a real
GPU (tests/agent/fixtures/). A reading NVML refuses is recorded as {"error": "..."}.
"""

import json
import sys

import pynvml as n


def read(f, *args):
    try:
        v = f(*args)
    except n.NVMLError as e:
        return {"error": str(e)}
    if isinstance(v, bytes):
        return v.decode()
    return v


def struct(v, fields):
    if isinstance(v, dict):
        return v
    return {f: getattr(v, f) for f in fields}


def device(h):
    d = {
        "name": read(n.nvmlDeviceGetName, h),
        "uuid": read(n.nvmlDeviceGetUUID, h),
        "index": read(n.nvmlDeviceGetIndex, h),
        "pci_bus_id": read(lambda x: n.nvmlDeviceGetPciInfo(x).busId, h),
        "memory": struct(read(n.nvmlDeviceGetMemoryInfo, h), ("total", "used", "free")),
        "mig_mode": read(n.nvmlDeviceGetMigMode, h),
        "utilization": struct(read(n.nvmlDeviceGetUtilizationRates, h), ("gpu", "memory")),
        "power_mw": read(n.nvmlDeviceGetPowerUsage, h),
        "power_limit_mw": read(n.nvmlDeviceGetEnforcedPowerLimit, h),
        "energy_mj": read(n.nvmlDeviceGetTotalEnergyConsumption, h),
        "clock_sm_mhz": read(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
        "clock_mem_mhz": read(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
        "max_clock_sm_mhz": read(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_SM),
        "temperature_c": read(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
        "compute_mode": read(n.nvmlDeviceGetComputeMode, h),
        "multiprocessors": read(lambda x: n.nvmlDeviceGetAttributes(x).multiprocessorCount, h),
    }
    procs = read(n.nvmlDeviceGetComputeRunningProcesses, h)
    d["compute_processes"] = procs if isinstance(procs, dict) else [
        {"pid": p.pid, "used_gpu_memory": p.usedGpuMemory,
         "gpu_instance_id": getattr(p, "gpuInstanceId", None)} for p in procs]
    mps = read(n.nvmlDeviceGetMPSComputeRunningProcesses, h)
    d["mps_processes"] = mps if isinstance(mps, dict) else [
        {"pid": p.pid, "used_gpu_memory": p.usedGpuMemory} for p in mps]
    samples = read(n.nvmlDeviceGetProcessUtilization, h, 0)
    d["process_utilization"] = samples if isinstance(samples, dict) else [
        {"pid": s.pid, "sm": s.smUtil, "mem": s.memUtil} for s in samples]
    mig = d["mig_mode"]
    d["mig_devices"] = []
    if isinstance(mig, list) and mig and mig[0] == 1:
        count = read(n.nvmlDeviceGetMaxMigDeviceCount, h)
        for i in range(count if isinstance(count, int) else 0):
            try:
                m = n.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
            except n.NVMLError:
                continue
            d["mig_devices"].append({
                "uuid": read(n.nvmlDeviceGetUUID, m),
                "gpu_instance_id": read(n.nvmlDeviceGetGpuInstanceId, m),
                "memory": struct(read(n.nvmlDeviceGetMemoryInfo, m), ("total", "used", "free")),
            })
    return d


def main():
    n.nvmlInit()
    try:
        out = {"driver": read(n.nvmlSystemGetDriverVersion),
               "nvml": read(n.nvmlSystemGetNVMLVersion),
               "cuda_driver": read(n.nvmlSystemGetCudaDriverVersion),
               "devices": [device(n.nvmlDeviceGetHandleByIndex(i))
                           for i in range(n.nvmlDeviceGetCount())]}
    finally:
        n.nvmlShutdown()
    json.dump(out, sys.stdout, indent=1, default=str)
    print()


if __name__ == "__main__":
    main()
