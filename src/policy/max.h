#pragma once
// max (seed 000, Ch. 9.2.2): the most resources for every workload — all GPUs used whole (MIG
// turned off on every idle MIG-capable GPU, MPS not used), one workload per GPU through the
// device plugin, first fit; a workload that finds no idle GPU waits in the queue.

#include "policy/policy.h"

namespace tessera::policy {

class Max final : public Policy {
 public:
  std::string_view name() const override { return "max"; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  // An idle GPU still cut by MIG is offered with a reshape to MIG-off.
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // Filter (the node's idle or reshapable GPUs) reads the node alone, and so does the offer (the
  // core keeps its verdicts and ranks the nodes by offer).
  OfferInputs OffersDependOn() const override {
    return {.node_local_filter = true, .node_local_score = true};
  }
  // Idle MIG GPUs go whole.
  std::optional<std::optional<MigLayout>> Reshape(GpuIndex idle_gpu,
                                                  const ClusterState& c) override;
};

}  // namespace tessera::policy
