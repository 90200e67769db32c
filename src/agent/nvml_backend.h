#pragma once
// NvmlBackend: the node's real GPUs through NVML, loaded at run time with dlopen of
// libnvidia-ml.so.1 (the driver installs it), so Tessera builds and runs without CUDA or NVML
// present; only the functions listed in nvml_backend.cc are resolved. DESIGN §6.
//
// Discovery: every device's name, uuid, memory, MIG mode, and for MIG-enabled devices every MIG
// device's uuid, GPU-instance id, profile (by the instance's NVML profile id, matched against
// the catalog's gi_profile_id) and placement start. A device that answers
// NVML_ERROR_GPU_IS_LOST is reported lost. Readings: utilisation (NVML's "utilization.gpu",
// used as the graphics-engine activity of a whole GPU; per-MIG activity needs DCGM profiling
// and is left unknown), memory used/free per GPU or MIG device, power, total energy, and for
// a whole GPU the number of MPS clients (nvmlDeviceGetMPSComputeRunningProcesses_v3, where
// the driver has it; MIG instances' MPS servers are not read). Where the driver has them
// (resolved optionally): the SM clock (nvmlDeviceGetClockInfo), each compute process's memory
// (nvmlDeviceGetComputeRunningProcesses_v3; on MIG placed on its instance by gpuInstanceId)
// and, on a whole GPU, its SM and memory-controller shares (nvmlDeviceGetProcessUtilization);
// a whole GPU's DRAM activity is NVML's "utilization.memory". These per-process readings are
// unverified on hardware (docs/runtime.md).
// MIG management (mig_control.h), where the driver has it: GPU instances listed per profile,
// created with a placement (nvmlDeviceCreateGpuInstanceWithPlacement) with one compute instance
// spanning each, and destroyed compute instances first. Needs root, as nvidia-smi mig does.
// Not thread-safe (the agent serialises calls). Changes device state only through MigControl,
// and never MIG mode.

#include <memory>
#include <string>

#include "agent/gpu_backend.h"

namespace tessera::agent {

class NvmlBackend final : public GpuBackend, public MigControl {
 public:
  // dlopen + nvmlInit; an Error names the library or the NVML error string.
  [[nodiscard]] static Expected<std::unique_ptr<NvmlBackend>> Open(
      const std::string& library = "libnvidia-ml.so.1");
  ~NvmlBackend() override;  // nvmlShutdown + dlclose

  std::string name() const override { return "nvml"; }
  Expected<std::vector<store::GpuInventory>> Discover() override;
  Expected<std::vector<GpuSample>> Sample(const std::vector<store::GpuInventory>& gpus) override;
  MigControl* mig_control() override;

  MigResult<std::vector<MigInstanceState>> ListInstances(const store::GpuInventory& gpu) override;
  MigResult<int> CreateInstance(const store::GpuInventory& gpu, int profile_id, int start,
                                int memory_slices, int compute_slices) override;
  MigResult<void> DestroyInstance(const store::GpuInventory& gpu, int gi_id) override;

  struct Api;  // the resolved functions

 private:
  explicit NvmlBackend(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace tessera::agent
