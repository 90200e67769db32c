#pragma once
// MIG layouts: which GPU instances a MIG-capable GPU is cut into, and NVIDIA's rules for which
// cuts exist (NVIDIA MIG User Guide, "Supported MIG Profiles"; nvidia-smi mig -lgipp).
//
// A layout is a set of placed instances (profile, first memory slice). nvidia-smi accepts a
// layout iff every instance starts at a slice its profile allows, no two instances share a
// memory slice, no profile exceeds its instance count, at most one instance carries the media
// extensions (+me), and the compute slices add up to at most the GPU's. Values; thread-safe.

#include <compare>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/gpu_model.h"

namespace tessera::model {

struct MigInstance {
  int profile;  // index into GpuModel::mig_profiles
  int start;    // first memory slice
  auto operator<=>(const MigInstance&) const = default;
};

struct MigLayout {
  std::vector<MigInstance> instances;  // sorted by start (Normalize)
  auto operator<=>(const MigLayout&) const = default;
};

// Sorts instances by start slice so equal layouts compare equal.
void Normalize(MigLayout& layout);

// Ok, or the first rule the layout breaks, naming the instance.
[[nodiscard]] Expected<void> ValidateLayout(const GpuModel& model, const MigLayout& layout);

// Every valid layout to which no further instance can be added — the "supported
// configurations" of NVIDIA's user guide — over the model's profiles without media extensions
// (a +me instance has the geometry of its plain twin). Sorted, deterministic. Empty for a
// model that is not MIG-capable. A100 (without 1g.10gb) gives the guide's 19 configurations.
// Computed once per model and cached (thread-safe).
const std::vector<MigLayout>& ValidLayouts(const GpuModel& model);
// The same, restricted to the given profile indices.
std::vector<MigLayout> ValidLayouts(const GpuModel& model, const std::vector<int>& profiles);

// Layouts with the same multiset of profiles are interchangeable for a scheduler that only
// reshapes empty GPUs; this keeps the first of each (by the order above).
std::vector<MigLayout> DistinctByProfiles(const std::vector<MigLayout>& layouts);

// "1g.5gb@0,2g.10gb@2" — stable text form, also accepted by ParseLayout.
std::string LayoutToString(const GpuModel& model, const MigLayout& layout);
// Parses "3g.20gb@0,3g.20gb@4", or "3g.20gb,3g.20gb" (each instance at its first free start).
[[nodiscard]] Expected<MigLayout> ParseLayout(const GpuModel& model, const std::string& text);

}  // namespace tessera::model
