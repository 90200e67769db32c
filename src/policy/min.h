#pragma once
// min (seed 000, Ch. 9.2.1): the least resources for every workload — every MIG-capable GPU
// cut into as many instances as it allows (all smallest profile), every other GPU limited
// through MPS to 25% (thread limit 25%, a quarter of the memory); first fit; when no slot is
// free, workloads wait in the queue. Ch. 9.2.1 reads two ways on the GPUs without MIG (option
// `mps_slots`, docs/simulator.md): the device plugin ties one application to a device, which
// "does not support sharing between applications" (1, default), or the GPU holds four 25%
// applications at once, "small enough" to share it (4). The thesis found stricter limits than
// 25% caused failures.

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "policy/policy.h"
#include "policy/registry.h"

namespace tessera::policy {

// Options (`tessera simulate --list-policies`).
std::vector<OptionInfo> MinOptionList();
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakeMin(const PolicyContext& context,
                                                        const nlohmann::json& options);

class Min final : public Policy {
 public:
  static constexpr int32_t kMpsSlotMilli = 250;
  // `mps_slots`: applications a GPU without MIG holds at once, each at 25% (1 or 4).
  explicit Min(int mps_slots = 1) : mps_slots_(mps_slots) {}

  std::string_view name() const override { return "min"; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  std::optional<std::optional<MigLayout>> Reshape(GpuIndex idle_gpu,
                                                  const ClusterState& c) override;

  // The layout of `model` with the most instances: all of its smallest plain profile.
  static MigLayout SmallestLayout(const model::GpuModel& model);

 private:
  int mps_slots_;
  std::optional<Candidate> Offer(const Workload& w, NodeIndex node, const ClusterState& c) const;
};

}  // namespace tessera::policy
