#pragma once
// min (seed 000, Ch. 9.2.1): the least resources for every workload — every MIG-capable GPU
// cut into as many instances as it allows (all smallest profile), every other GPU shared
// through MPS in four 25% slots (thread limit 25%, a quarter of the memory), one workload per
// slot, first fit; when every slot is taken, workloads wait in the queue (the device plugin
// does not share a slot). The thesis found stricter limits than 25% caused failures.

#include "policy/policy.h"

namespace tessera::policy {

class Min final : public Policy {
 public:
  static constexpr int32_t kMpsSlotMilli = 250;

  std::string_view name() const override { return "min"; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  std::optional<std::optional<MigLayout>> Reshape(GpuIndex idle_gpu,
                                                  const ClusterState& c) override;

  // The layout of `model` with the most instances: all of its smallest plain profile.
  static MigLayout SmallestLayout(const model::GpuModel& model);

 private:
  std::optional<Candidate> Offer(const Workload& w, NodeIndex node, const ClusterState& c) const;
};

}  // namespace tessera::policy
