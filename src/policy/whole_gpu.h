#pragma once
// whole-gpu: Kubernetes' default with the NVIDIA device plugin — every GPU workload gets whole,
// MIG-disabled GPUs of its own (nvidia.com/gpu: N), first fit in cluster order, whatever share
// it asked for. GPUs are never reshaped. The baseline an operator runs today.

#include "policy/policy.h"

namespace tessera::policy {

class WholeGpu final : public Policy {
 public:
  std::string_view name() const override { return "whole-gpu"; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // Filter (NodeFits of the whole-GPU request) reads the node alone, and so does the offer (the
  // core keeps its verdicts and ranks the nodes by offer).
  OfferInputs OffersDependOn() const override {
    return {.node_local_filter = true, .node_local_score = true};
  }
};

// The same request as `w` but for whole GPUs (share 1000, no MIG profile); shared by the
// baselines that hand out devices.
Workload AsWholeGpuRequest(const Workload& w);

}  // namespace tessera::policy
