#pragma once
// gpu-clustering: the FGD paper's "GPU Clustering" baseline (ATC'23 §6.1, after Gandiva's
// affinity; reference simulator plugin/gpu_clustering_score.go). A GPU request has an affinity
// tag — "share" (one GPU, < 1000 milli) or "k-gpu" (k whole GPUs); a node's tags are those of the
// GPU workloads on it. With t = ⌊25 · (8000 − node free GPU milli) / 8000⌋:
//   node holds only the request's tag: 75 + t;  holds it among others: 50 + t;
//   node holds no GPU workload: 25 + t;         holds only other tags: t.
// CPU-only requests score 0 everywhere. A GPU share goes to the best-fitting GPU. No options.

#include "policy/policy.h"

namespace tessera::policy {

class GpuClustering final : public Policy {
 public:
  std::string_view name() const override { return "gpu-clustering"; }
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // The default Filter (NodeFits) reads the node alone, and so does the offer (the core keeps
  // its verdicts and ranks the nodes by offer).
  OfferInputs OffersDependOn() const override {
    return {.node_local_filter = true, .node_local_score = true};
  }
  // Bit set of the affinity tags on node n (bit 0: share; bit k: k whole GPUs).
  static uint64_t NodeTags(const ClusterState& c, NodeIndex n);
};

}  // namespace tessera::policy
