#pragma once
// GpuBackend: where the agent learns what GPUs its node has and what they are doing — NVML on
// a GPU node (nvml_backend.h), a scripted file elsewhere (fake_backend.h). DESIGN §6; thesis
// Ch. 8.2 (the exporter discovers GPU uuids and metrics on every GPU node).
//
// A reading that the device cannot give (NVML_ERROR_NOT_SUPPORTED, a MIG instance's power) is
// nullopt and its series is left out of /metrics, never reported as zero.
// Not thread-safe: the agent serialises calls.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/mig_control.h"
#include "base/error.h"
#include "store/records.h"

namespace tessera::agent {

struct PartitionSample {
  std::optional<double> activity;  // graphics engine active, 0..1 (DCGM_FI_PROF_GR_ENGINE_ACTIVE)
  std::optional<double> fb_used_mib;
  std::optional<double> fb_free_mib;
  std::optional<double> sm_active;    // share of SM cycles with a warp resident, 0..1
                                      // (DCGM_FI_PROF_SM_ACTIVE)
  std::optional<double> dram_active;  // share of time device memory is read or written, 0..1
                                      // (DCGM_FI_PROF_DRAM_ACTIVE)
};

// One process with a context on a partition, as the backend sees it; the agent sums a pod's
// processes into its per-pod series (tessera_pod_*). Shares are of the partition, not the GPU.
struct ProcessSample {
  uint32_t pid = 0;            // as the node (the host's PID namespace) numbers it
  std::string partition_uuid;  // the partition the process runs on
  std::optional<double> fb_used_mib;
  std::optional<double> sm;    // 0..1
  std::optional<double> dram;  // 0..1
  std::string pod_uid;         // empty: the agent resolves it from the pid's cgroup
  bool operator==(const ProcessSample&) const = default;
};

// The MPS server of a whole GPU, as far as the backend can see it (seed 001 §4.2: a client
// stopped mid-kernel can hang the server and every workload on the GPU with it).
struct MpsSample {
  std::optional<bool> server;      // an MPS server runs on this GPU; nullopt: cannot tell
  int clients = 0;                 // CUDA processes attached through the server
  std::optional<bool> responsive;  // the server answered its control daemon in time and is not
                                   // in a fault state; nullopt: not asked
  bool operator==(const MpsSample&) const = default;
};

struct GpuSample {
  std::optional<double> gpu_util_pct;  // DCGM_FI_DEV_GPU_UTIL, 0..100
  std::optional<double> power_w;
  std::optional<double> energy_mj;     // since boot (NVML) or since the agent started (fake)
  std::optional<double> sm_clock_mhz;  // DCGM_FI_DEV_SM_CLOCK
  // Parallel to GpuInventory::partitions (one entry, the whole GPU, when MIG is off).
  std::vector<PartitionSample> partitions;
  std::optional<MpsSample> mps;          // nullopt: the backend knows nothing of MPS on this GPU
  std::vector<ProcessSample> processes;  // the compute processes the backend could see
  // The backend listed the GPU's compute processes: `processes` is all of them, and a pod placed
  // here with none runs nothing on it now (starting, or restarting after a crash).
  bool processes_listed = false;
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual std::string name() const = 0;  // "nvml" | "fake"
  // The node's GPUs as they are now. An Error means this round learnt nothing (the caller
  // keeps what it knew); a single GPU that fails comes back with lost = true.
  [[nodiscard]] virtual Expected<std::vector<store::GpuInventory>> Discover() = 0;
  // Readings for `gpus` (as Discover returned them), one GpuSample per GPU.
  [[nodiscard]] virtual Expected<std::vector<GpuSample>> Sample(
      const std::vector<store::GpuInventory>& gpus) = 0;
  // Creating and destroying MIG instances; null when this backend cannot (the fake file, or a
  // driver without NVML's MIG management calls).
  virtual MigControl* mig_control() { return nullptr; }
};

}  // namespace tessera::agent
