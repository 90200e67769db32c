#pragma once
// The GPU catalog: every GPU model Tessera knows, with its compute, memory, power and — for
// MIG-capable models — NVIDIA's GPU-instance profile table and placement rules (DESIGN §2).
//
// The catalog is immutable static data: GpuModel objects live for the whole program and are
// referred to by GpuModelId (an index into AllGpuModels()), which is what hot paths compare.
// Thread-safe (read-only).
//
// Sources: NVIDIA data sheets for SMs, memory, FP16 tensor / FP32 TFLOPS, bandwidth and TDP;
// idle power is the typical nvidia-smi reading of an idle, persistence-mode board. MIG profiles,
// their instance counts and their placements follow the NVIDIA Multi-Instance GPU User Guide,
// "Supported MIG Profiles" (tables "A30-24GB", "A100-SXM4-40GB", "A100-SXM4-80GB",
// "H100-SXM5-80GB", "H200-SXM5-141GB") and `nvidia-smi mig -lgipp` (placements in memory
// slices: a profile may start only at the listed slices and occupies `memory_slices` of them).
// Memory sizes are the nominal GiB of the profile names, in MiB (1g.5gb = 5120 MiB).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::model {

using GpuModelId = int16_t;

struct MigProfile {
  std::string name;         // "1g.5gb", "1g.5gb+me"
  int gi_profile_id;        // NVML GPU-instance profile id (nvidia-smi mig -lgip "ID")
  int compute_slices;       // of GpuModel::mig_compute_slices
  int memory_slices;        // of GpuModel::mig_memory_slices
  int64_t memory_mib;       // nominal
  int max_count;            // instances of this profile a GPU can hold at once
  std::vector<int> starts;  // allowed first memory slice
  bool media_extensions;    // "+me": owns the GPU's JPEG/OFA engines; one per GPU
};

struct GpuModel {
  GpuModelId id;
  std::string name;                  // canonical: "A100-40GB"
  std::vector<std::string> aliases;  // "A100-SXM4-40GB", NVML product names
  bool opaque;                       // a trace's undisclosed type: no spec, only a name
  int sms;
  int64_t memory_mib;
  double fp16_tflops;  // dense tensor-core FP16
  double fp32_tflops;
  double bandwidth_gbs;
  double idle_watts;
  double max_watts;
  // Relative to A100-40GB (= 1.0); used by roofline-style estimates.
  double relative_compute;
  double relative_bandwidth;
  // MIG: 0 slices and no profiles when the model is not MIG-capable.
  int mig_compute_slices;
  int mig_memory_slices;
  std::vector<MigProfile> mig_profiles;

  bool mig_capable() const { return !mig_profiles.empty(); }
  // Index into mig_profiles, or nullopt.
  std::optional<int> FindProfile(std::string_view profile_name) const;
};

// Every model, indexed by GpuModelId.
std::span<const GpuModel> AllGpuModels();
const GpuModel& GetGpuModel(GpuModelId id);
// By canonical name or alias, case-insensitive ("a100-sxm4-40gb", "V100M32", "H100").
std::optional<GpuModelId> FindGpuModel(std::string_view name);

}  // namespace tessera::model
