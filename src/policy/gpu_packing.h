#pragma once
// gpu-packing: the FGD paper's "GPU Packing" baseline (ATC'23 §6.1; reference simulator
// plugin/gpu_packing_score.go). Three tiers, higher first:
//  1. the request fits on partly used GPUs: 100 − Σ_used ⌊free·100/1000⌋ / 10, at least 50;
//  2. it must open idle GPUs of a node that is already in use: 50 − (idle GPUs opened), ≥ 33;
//  3. the node is entirely idle: max(33 − GPUs of the node, GPUs of the node).
// GPUs are taken tightest first (least free milli), so a share goes to the best-fitting GPU.
// CPU-only requests score 0 everywhere (the core's tie-break decides). Integer arithmetic, as
// the reference. No options.

#include "policy/policy.h"

namespace tessera::policy {

class GpuPacking final : public Policy {
 public:
  std::string_view name() const override { return "gpu-packing"; }
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // The default Filter (NodeFits) reads the node alone, and so does the offer (the core keeps
  // its verdicts and ranks the nodes by offer).
  OfferInputs OffersDependOn() const override {
    return {.node_local_filter = true, .node_local_score = true};
  }
};

}  // namespace tessera::policy
