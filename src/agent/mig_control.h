#pragma once
// MigControl: creating and destroying the instances of a GPU whose MIG mode is on — NVML's
// "Multi Instance GPU Management". An instance here is a GPU instance with one compute instance
// spanning it (a MIG device), what `nvidia-smi mig -cgi <profile>:<start> -C` makes. The
// reshaper (mig_reshaper.h) drives it; NvmlBackend implements it. It never changes MIG mode
// (that needs the GPU idle and reset: the operator's, not the agent's).
// Not thread-safe: the agent serialises it with discovery and sampling.

#include <expected>
#include <string>
#include <vector>

#include "store/records.h"

namespace tessera::agent {

// Why a MIG operation failed, as NVML says it.
enum class MigFault {
  kBusy,                   // NVML_ERROR_IN_USE: a process runs on it
  kInsufficientResources,  // NVML_ERROR_INSUFFICIENT_RESOURCES: the slices are taken
  kNotSupported,           // MIG off, an unknown profile, a driver without the call
  kNoPermission,           // NVML_ERROR_NO_PERMISSION: the agent is not root
  kGpuLost,                // NVML_ERROR_GPU_IS_LOST
  kTimedOut,               // the reshape budget ran out (the reshaper's, not NVML's)
  kInvalid,                // the request itself is wrong (a layout NVIDIA does not allow)
  kOther,
};
const char* MigFaultName(MigFault fault);  // "busy", "insufficient-resources", ...

struct MigError {
  MigFault fault = MigFault::kOther;
  std::string message;  // names the GPU, the instance and NVML's text
};
template <typename T>
using MigResult = std::expected<T, MigError>;

// A GPU instance as it is now, whether or not a compute instance exists in it.
struct MigInstanceState {
  int gi_id = -1;
  int profile_id = -1;  // NVML GPU-instance profile id (the catalog's gi_profile_id)
  int start = 0;        // first memory slice
  int compute_instances = 0;
  int processes = -1;  // compute processes running in it; -1: NVML cannot tell
  bool operator==(const MigInstanceState&) const = default;
};

class MigControl {
 public:
  virtual ~MigControl() = default;
  // `gpu` as discovery reported it (index, uuid, model); an Error when the GPU at that index is
  // no longer this one.
  [[nodiscard]] virtual MigResult<std::vector<MigInstanceState>> ListInstances(
      const store::GpuInventory& gpu) = 0;
  // A GPU instance of `profile_id` at `start` spanning `memory_slices`, and one compute
  // instance of `compute_slices` in it; the new GPU instance's id. When the compute instance
  // cannot be made, the GPU instance is destroyed again before the error returns.
  [[nodiscard]] virtual MigResult<int> CreateInstance(const store::GpuInventory& gpu,
                                                      int profile_id, int start, int memory_slices,
                                                      int compute_slices) = 0;
  // Its compute instances, then the GPU instance.
  [[nodiscard]] virtual MigResult<void> DestroyInstance(const store::GpuInventory& gpu,
                                                        int gi_id) = 0;
};

}  // namespace tessera::agent
